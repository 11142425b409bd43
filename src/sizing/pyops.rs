//! Python arithmetic SGLang's formulas rely on: floor division that rounds toward −∞
//! (also on negatives, so a negative budget prints `-0.50`), float floor division, and
//! `int(float)` truncation.

/// Python `a // b` on ints (floor toward −∞). `b` must be non-zero.
pub fn py_floordiv(a: i128, b: i128) -> i128 {
    let q = a / b;
    if (a % b != 0) && ((a < 0) != (b < 0)) {
        q - 1
    } else {
        q
    }
}

/// Python `a // b` on floats (CPython `float_floor_div`: `(a - fmod(a, b)) / b`, adjusted
/// to the floor, then snapped to the nearest integer when within 0.5).
pub fn py_float_floordiv(a: f64, b: f64) -> f64 {
    let m = a % b;
    let mut div = (a - m) / b;
    if m != 0.0 && ((b < 0.0) != (m < 0.0)) {
        div -= 1.0;
    }
    if div != 0.0 {
        let mut floordiv = div.floor();
        if div - floordiv > 0.5 {
            floordiv += 1.0;
        }
        floordiv
    } else {
        0.0_f64.copysign(a / b)
    }
}

/// Python `int(x)` for a finite float: truncation toward zero.
pub fn py_int(x: f64) -> i128 {
    x.trunc() as i128
}

/// Python `round(x, ndigits)` on a float: the nearest multiple of `10^-ndigits` by the
/// exact binary value, ties to even (CPython formats with correctly rounded `dtoa`, as
/// Rust's `{:.N}` does), read back as a float.
pub fn py_round(x: f64, ndigits: usize) -> f64 {
    format!("{x:.ndigits$}").parse().unwrap_or(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floordiv_rounds_toward_minus_infinity() {
        assert_eq!(py_floordiv(7, 2), 3);
        assert_eq!(py_floordiv(-7, 2), -4);
        assert_eq!(py_floordiv(-8, 2), -4);
        assert_eq!(py_floordiv(-1, 4), -1);
        assert_eq!(py_float_floordiv(135e9, 44_928.0), 3_004_807.0);
        assert_eq!(py_float_floordiv(-7.0, 2.0), -4.0);
        assert_eq!(py_int(-2.7), -2);
        assert_eq!(py_int(116.9), 116);
        // CPython: round(2.675, 2) == 2.67 (2.675 is 2.67499999… in binary);
        // round(0.8935, 3) == 0.893 (0.89349999…); round(0.0625, 3) == 0.062 (tie, even).
        assert_eq!(py_round(2.675, 2), 2.67);
        assert_eq!(py_round(0.8935, 3), 0.893);
        assert_eq!(py_round(0.0625, 3), 0.062);
        assert_eq!(py_round(0.8936, 3), 0.894);
    }
}

/// Python's `repr(float)` / f-string `{x}` for the values SGLang prints (fractions,
/// ratios): the shortest round-trip digits, as Rust's `{}` gives them, with Python's
/// `.0` on whole numbers. (Python's exponent forms, below 1e-4 and from 1e16, are not
/// reproduced: no such value reaches a message.)
pub fn py_repr_float(x: f64) -> String {
    if x.is_finite() && x.fract() == 0.0 && x.abs() < 1e16 {
        format!("{x:.1}")
    } else {
        format!("{x}")
    }
}
