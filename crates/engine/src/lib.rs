//! The agent run: validation, transcript resolution, the step loop and event fan-out.
//!
//! `engine` knows no HTTP framework, database or HTTP client: everything slow or external reaches
//! it through the ports defined here ([`model::ModelClient`], [`store::Store`]).

pub mod model;
pub mod store;
