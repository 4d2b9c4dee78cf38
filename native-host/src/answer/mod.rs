//! Reading the model's answer: the JSON answer and its repairs
//! ([`parse`]), and the other answer formats a model may be prompted in
//! ([`dialect`]). Pure functions over text: no I/O, no settings.

pub mod dialect;
pub mod parse;
