//! tiermem-lab: experiments as data, on top of the simulator. For now it holds
//! [`validate`]: the simulator checked against recordings of the real kernel, scenario by
//! scenario (`tiermem validate`).
//!
//! ```no_run
//! let sc = tiermem_lab::validate::Scenario::load(std::path::Path::new("validation/promote-default"), None).unwrap();
//! let outcome = sc.run().unwrap();
//! print!("{}", outcome.table());
//! ```

pub mod validate;
