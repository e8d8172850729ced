//! Leopold's test kit: helpers shared by the end-to-end suites. See issue #6.
