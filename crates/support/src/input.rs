//! The error bad caller input gets (a JS `TypeError` or `RangeError` naming the field and
//! the value), and the number formatting its messages use.

use std::fmt;

/// Whether bad input is of the wrong type or out of range (maps to JS `TypeError` /
/// `RangeError`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputErrorKind {
    /// A value of the wrong type or shape (JS `TypeError`).
    Type,
    /// A value of the right type but outside its allowed range (JS `RangeError`).
    Range,
}

/// Caller input rejected before anything was sent. `field` is a path such as
/// `data[3].loss_fn_inputs.weights`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputError {
    /// Type or range.
    pub kind: InputErrorKind,
    /// The offending field's path.
    pub field: String,
    /// What is wrong, including the value.
    pub message: String,
}

impl InputError {
    /// A type error at `field`.
    pub fn type_error(field: impl Into<String>, message: impl Into<String>) -> Self {
        InputError {
            kind: InputErrorKind::Type,
            field: field.into(),
            message: message.into(),
        }
    }
    /// A range error at `field`.
    pub fn range_error(field: impl Into<String>, message: impl Into<String>) -> Self {
        InputError {
            kind: InputErrorKind::Range,
            field: field.into(),
            message: message.into(),
        }
    }
    /// Prefixes the field path (`data[3]` + `.weights`).
    pub fn within(mut self, prefix: &str) -> Self {
        self.field = if self.field.is_empty() {
            prefix.to_string()
        } else if self.field.starts_with('[') {
            format!("{prefix}{}", self.field)
        } else {
            format!("{prefix}.{}", self.field)
        };
        self
    }
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.field.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.field, self.message)
        }
    }
}

impl std::error::Error for InputError {}

/// The most elements one token or tensor array may hold (2^24, 16 Mi: far beyond any
/// model's context). Longer arrays are refused before they are copied anywhere.
pub const MAX_ELEMENTS: usize = 1 << 24;

/// A number as JavaScript prints it (`NaN`, `Infinity`, `-1e-8`), for error messages.
pub fn fmt_num(x: f64) -> String {
    crate::json::fmt_js(x)
}

#[cfg(test)]
mod tests {
    use super::fmt_num;

    #[test]
    fn numbers_print_as_in_javascript() {
        assert_eq!(fmt_num(f64::NAN), "NaN");
        assert_eq!(fmt_num(f64::INFINITY), "Infinity");
        assert_eq!(fmt_num(f64::NEG_INFINITY), "-Infinity");
        assert_eq!(fmt_num(-1e-8), "-1e-8");
        assert_eq!(fmt_num(1e21), "1e+21");
        assert_eq!(fmt_num(0.001), "0.001");
        assert_eq!(fmt_num(-5.0), "-5");
        assert_eq!(fmt_num(4294967296.0), "4294967296");
    }
}
