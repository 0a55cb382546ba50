//! The learning-rate schedules (`utils/lr_scheduling.py`).

use tinker_support::input::InputError;

/// `LRSchedule`: how the learning rate decays over a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LrSchedule {
    /// From the base rate down to 0 at the last step.
    Linear,
    /// Half a cosine from the base rate down to 0.
    Cosine,
    /// The base rate throughout.
    Constant,
}

impl LrSchedule {
    /// The schedule of a config's `lr_schedule` name.
    pub fn parse(name: &str) -> Result<Self, InputError> {
        match name {
            "linear" => Ok(LrSchedule::Linear),
            "cosine" => Ok(LrSchedule::Cosine),
            "constant" => Ok(LrSchedule::Constant),
            other => Err(InputError::range_error(
                "lr_schedule",
                format!(
                    "Unknown learning rate schedule: {}; expected \"linear\", \"cosine\" or \"constant\"",
                    tinker_support::json::quote(other)
                ),
            )),
        }
    }

    /// The config name of the schedule.
    pub fn name(self) -> &'static str {
        match self {
            LrSchedule::Linear => "linear",
            LrSchedule::Cosine => "cosine",
            LrSchedule::Constant => "constant",
        }
    }

    /// `compute_schedule_lr_multiplier(schedule, step, total_steps)`: the factor of the
    /// base learning rate at `step` (from 0) of `total_steps`.
    pub fn multiplier(self, step: u64, total_steps: u64) -> Result<f64, InputError> {
        if total_steps == 0 {
            return Err(InputError::range_error(
                "total_steps",
                "total_steps must be positive, got 0",
            ));
        }
        let (step, total) = (step as f64, total_steps as f64);
        // The cookbook's expressions, in its order of operations (`pi * step / total` is
        // not `pi * (step / total)` in floating point).
        Ok(match self {
            LrSchedule::Linear => 1.0 - step / total,
            LrSchedule::Cosine => 0.5 * (1.0 + (std::f64::consts::PI * step / total).cos()),
            LrSchedule::Constant => 1.0,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_names_are_refused() {
        for s in [LrSchedule::Linear, LrSchedule::Cosine, LrSchedule::Constant] {
            assert_eq!(LrSchedule::parse(s.name()), Ok(s));
        }
        let e = LrSchedule::parse("exponential").unwrap_err();
        assert_eq!(e.field, "lr_schedule");
        assert!(e.message.contains("\"exponential\""), "{e}");
    }

    #[test]
    fn schedules_start_at_the_base_rate_and_zero_steps_are_refused() {
        for s in [LrSchedule::Linear, LrSchedule::Cosine, LrSchedule::Constant] {
            assert_eq!(s.multiplier(0, 10), Ok(1.0));
            assert!(s.multiplier(3, 0).is_err());
        }
        assert!(LrSchedule::Linear.multiplier(5, 10).unwrap() < 1.0);
        assert!(
            LrSchedule::Cosine.multiplier(9, 10).unwrap()
                < LrSchedule::Cosine.multiplier(1, 10).unwrap()
        );
    }
}
