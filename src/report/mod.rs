//! (to be written)

pub mod plot;
