//! Leopold action journal: harness stream adapters, validation, replay. See issue #4.
