//! Tests of the wiring: properties, refusals, atomicity.
