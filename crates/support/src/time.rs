//! Durations from numbers that may come from a server, a header or a caller.

use std::time::Duration;

/// `secs` seconds as a [`Duration`], saturating instead of panicking as
/// `Duration::from_secs_f64` does: a negative number or NaN is zero, and anything too large
/// for a `Duration` (infinity included) is [`Duration::MAX`].
pub fn seconds(secs: f64) -> Duration {
    if secs.is_nan() || secs <= 0.0 {
        Duration::ZERO
    } else {
        Duration::try_from_secs_f64(secs).unwrap_or(Duration::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saturates_where_from_secs_f64_panics() {
        let cases = [
            (1.5, Duration::from_millis(1500)),
            (0.0, Duration::ZERO),
            (-0.0, Duration::ZERO),
            (-3.0, Duration::ZERO),
            (f64::NAN, Duration::ZERO),
            (f64::NEG_INFINITY, Duration::ZERO),
            (f64::INFINITY, Duration::MAX),
            (1e300, Duration::MAX),
            (1e-10, Duration::from_nanos(0)),
        ];
        for (secs, expected) in cases {
            assert_eq!(seconds(secs), expected, "{secs}");
        }
    }
}
