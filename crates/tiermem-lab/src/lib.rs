//! tiermem-lab: experiments as data, on top of the simulator.
//!
//! * [`experiment`], [`experiment_file`]: experiments (the built-ins are the files of
//!   `experiments/`), one generic runner, reports;
//! * [`sweep`]: parameter sweeps from a sweep file (a grid of `set` paths over a base config);
//! * [`plots`]: the PNG/SVG plots an experiment's or sweep's `results.json` asks for;
//! * [`published`]: how close a simulated figure is to its published one (±25 %);
//! * [`seeds`]: an experiment over several seeds (means and deviations);
//! * [`tuner`]: the weighted-interleave weight tuner;
//! * [`validate`]: the simulator checked against recordings of the real kernel, scenario by
//!   scenario (`tiermem validate`).
//!
//! ```no_run
//! let sc = tiermem_lab::validate::Scenario::load(std::path::Path::new("validation/promote-default"), None).unwrap();
//! let outcome = sc.run().unwrap();
//! print!("{}", outcome.table());
//! ```

pub mod experiment;
pub mod experiment_file;
mod fonts;
pub mod plots;
pub mod published;
pub mod seeds;
pub mod sweep;
pub mod tuner;
pub mod validate;
