//! The shape of a supervised run (`supervised/train.py`, `checkpoint_utils.py`'s
//! `CheckpointManager`): which steps run, each step's learning rate and progress, and
//! when it evaluates and saves. Pure decisions; the loop that acts on them is elsewhere.

use tinker_support::input::InputError;

use crate::schedule::LrSchedule;

/// The config fields that decide a run's steps (the cookbook's names and defaults in
/// [`SftPlan::defaults`]).
#[derive(Debug, Clone, PartialEq)]
pub struct SftPlan {
    /// Batches in an epoch (`len(dataset)`).
    pub n_batches: u64,
    /// `num_epochs`.
    pub num_epochs: u64,
    /// `max_steps`: stop after this many steps in all.
    pub max_steps: Option<u64>,
    /// `learning_rate`.
    pub learning_rate: f64,
    /// `lr_schedule`.
    pub lr_schedule: LrSchedule,
    /// `eval_every` (0: never).
    pub eval_every: u64,
    /// `infrequent_eval_every` (0: never).
    pub infrequent_eval_every: u64,
    /// `save_every` (0: never).
    pub save_every: u64,
    /// `save_every_tokens` (0: never).
    pub save_every_tokens: u64,
    /// `save_every_seconds` (0: never).
    pub save_every_seconds: f64,
    /// `rolling_save_every` (0: never).
    pub rolling_save_every: u64,
}

/// One step: where it is in the data and its global index (from 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Step {
    /// The epoch (from 0).
    pub epoch: u64,
    /// The batch within the epoch (from 0).
    pub batch: u64,
    /// `epoch * n_batches + batch`.
    pub step: u64,
}

/// Which kind of save a step makes, if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Save {
    /// Nothing.
    None,
    /// A periodic save: state and sampler weights, with `ttl_seconds`.
    Periodic,
    /// A rolling save: state only, with `rolling_ttl_seconds`; the previous one is deleted.
    Rolling,
}

impl SftPlan {
    /// The cookbook's defaults for a dataset of `n_batches` batches.
    pub fn defaults(n_batches: u64) -> Self {
        SftPlan {
            n_batches,
            num_epochs: 1,
            max_steps: None,
            learning_rate: 1e-4,
            lr_schedule: LrSchedule::Linear,
            eval_every: 10,
            infrequent_eval_every: 100,
            save_every: 20,
            save_every_tokens: 0,
            save_every_seconds: 0.0,
            rolling_save_every: 0,
        }
    }

    /// `n_batches * num_epochs`, capped by `max_steps`.
    pub fn total_steps(&self) -> u64 {
        let all = self.n_batches * self.num_epochs;
        self.max_steps.map_or(all, |m| all.min(m))
    }

    /// The steps left from `(start_epoch, start_batch)` (a resumed run's place), in order.
    pub fn steps(&self, start_epoch: u64, start_batch: u64) -> impl Iterator<Item = Step> + '_ {
        (start_epoch..self.num_epochs)
            .flat_map(move |epoch| {
                let first = if epoch == start_epoch { start_batch } else { 0 };
                (first..self.n_batches).map(move |batch| Step {
                    epoch,
                    batch,
                    step: epoch * self.n_batches + batch,
                })
            })
            .take_while(move |s| self.max_steps.is_none_or(|m| s.step < m))
    }

    /// Whether a run from `(start_epoch, start_batch)` trains at all (else it was complete:
    /// no final save).
    pub fn trains_from(&self, start_epoch: u64, start_batch: u64) -> bool {
        start_epoch < self.num_epochs
            && self
                .max_steps
                .is_none_or(|m| start_epoch * self.n_batches + start_batch < m)
    }

    /// The learning rate of `step` (`learning_rate * compute_schedule_lr_multiplier`).
    pub fn learning_rate(&self, step: u64) -> Result<f64, InputError> {
        Ok(self.learning_rate * self.lr_schedule.multiplier(step, self.total_steps())?)
    }

    /// `progress` as a step is submitted, and as it finishes (capped at 1).
    pub fn progress(&self, step: u64) -> (f64, f64) {
        let d = self.total_steps().max(1) as f64;
        (step as f64 / d, ((step + 1) as f64 / d).min(1.0))
    }

    /// Whether the evaluators run before `step` (and the infrequent ones).
    pub fn evals(&self, step: u64) -> (bool, bool) {
        let every = |n: u64| n > 0 && step % n == 0;
        (every(self.eval_every), every(self.infrequent_eval_every))
    }

    /// What `step` saves once it finishes: `tokens_since_save` tokens were trained and
    /// `seconds_since_save` passed since the last periodic save (or the start).
    pub fn save(&self, step: u64, tokens_since_save: u64, seconds_since_save: f64) -> Save {
        if step == 0 {
            return Save::None;
        }
        let periodic = (self.save_every > 0 && step % self.save_every == 0)
            || (self.save_every_tokens > 0 && tokens_since_save >= self.save_every_tokens)
            || (self.save_every_seconds > 0.0 && seconds_since_save >= self.save_every_seconds);
        let on_save_every = self.save_every > 0 && step % self.save_every == 0;
        if periodic {
            Save::Periodic
        } else if self.rolling_save_every > 0
            && step % self.rolling_save_every == 0
            && !on_save_every
        {
            Save::Rolling
        } else {
            Save::None
        }
    }
}

/// A periodic or rolling save's name: the step in six digits (`f"{step:06d}"`).
pub fn checkpoint_name(step: u64) -> String {
    format!("{step:06}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_resume_mid_epoch_and_stop_at_max_steps() {
        let mut p = SftPlan::defaults(3);
        p.num_epochs = 2;
        let all: Vec<u64> = p.steps(0, 0).map(|s| s.step).collect();
        assert_eq!(all, [0, 1, 2, 3, 4, 5]);
        let resumed: Vec<(u64, u64)> = p.steps(0, 2).map(|s| (s.epoch, s.batch)).collect();
        assert_eq!(resumed, [(0, 2), (1, 0), (1, 1), (1, 2)]);
        p.max_steps = Some(4);
        assert_eq!(p.total_steps(), 4);
        assert_eq!(p.steps(0, 0).count(), 4);
        assert!(p.trains_from(1, 0));
        assert!(!p.trains_from(1, 1));
        assert!(!p.trains_from(2, 0));
    }

    #[test]
    fn the_rate_decays_over_the_capped_total() {
        let mut p = SftPlan::defaults(10);
        p.max_steps = Some(4);
        assert_eq!(p.learning_rate(0), Ok(1e-4));
        assert_eq!(p.learning_rate(2), Ok(1e-4 * 0.5));
        assert_eq!(p.progress(3), (0.75, 1.0));
        assert!(SftPlan::defaults(0).learning_rate(0).is_err());
    }

    #[test]
    fn saves_follow_steps_tokens_and_seconds_and_rolling_saves_give_way() {
        let mut p = SftPlan::defaults(100);
        p.rolling_save_every = 5;
        for (step, tokens, secs, want) in [
            (0, 0, 0.0, Save::None),
            (20, 0, 0.0, Save::Periodic),
            (5, 0, 0.0, Save::Rolling),
            (10, 0, 0.0, Save::Rolling),
            (7, 0, 0.0, Save::None),
        ] {
            assert_eq!(p.save(step, tokens, secs), want, "step {step}");
        }
        p.save_every = 0;
        p.save_every_tokens = 1000;
        p.save_every_seconds = 60.0;
        assert_eq!(p.save(3, 999, 59.0), Save::None);
        assert_eq!(p.save(3, 1000, 0.0), Save::Periodic);
        assert_eq!(p.save(3, 0, 60.0), Save::Periodic);
        assert_eq!(p.save(20, 0, 0.0), Save::Rolling);
        assert_eq!(checkpoint_name(20), "000020");
        assert_eq!(p.evals(0), (true, true));
        assert_eq!(p.evals(30), (true, false));
    }
}
