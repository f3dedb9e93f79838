//! linerate
