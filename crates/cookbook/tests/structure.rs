//! The cookbook crate's shape (tinker-structure's rules): the numbers the cookbook
//! computes (data orders, rates), then a run's data, plan, records and DPO's pairs and loss, the run's state
//! machine, and the config a caller gives it.

use tinker_structure::Crate;

#[test]
fn the_cookbook_crate_keeps_its_layers() {
    Crate::new(
        env!("CARGO_MANIFEST_DIR"),
        &[
            (
                "numbers",
                &["rng.rs", "schedule.rs", "hyperparams.rs", "completers.rs"],
            ),
            (
                "runs",
                &[
                    "data.rs",
                    "plan.rs",
                    "checkpoints.rs",
                    "nll.rs",
                    "dpo.rs",
                    "rl.rs",
                    "rl_metrics.rs",
                    "rl_kl.rs",
                ],
            ),
            ("loops", &["sft.rs", "rl_loop.rs", "rl_async.rs"]),
            ("configs", &["config.rs"]),
        ],
    )
    .check();
}
