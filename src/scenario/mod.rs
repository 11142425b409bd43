//! Scenarios: the YAML a recipe author writes (node, model, SGLang flags, memory limits,
//! start-up timing, runtime and sweep settings), read with errors that name file, line
//! and field, and resolved against the node and model presets.

pub mod arith;
pub mod launch;
pub mod launch_env;
pub mod launch_file;
pub mod launch_schedule;
pub mod lines;
pub mod load;
pub mod resolve;
pub mod runtime_section;
pub mod schema;
pub mod shell;
pub mod yaml;

pub use load::{LoadedScenario, load_file, load_str};
pub use resolve::{MAX_RUNS, Scenario};
pub use runtime_section::{Engine, RuntimeSection};
pub use schema::ScenarioFile;
