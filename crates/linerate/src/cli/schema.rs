//! `linerate schema` arguments.

use clap::Args as ClapArgs;

use crate::export::json::SchemaName;

/// `linerate schema [NAME]`.
#[derive(Debug, ClapArgs)]
pub struct SchemaArgs {
    /// The record whose schema to print.
    #[arg(value_enum, default_value_t = SchemaName::Run)]
    pub which: SchemaName,
}
