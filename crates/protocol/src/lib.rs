//! agentd's wire types: the create request, input and output items, the response object, stream
//! events and the HTTP error envelope. serde only, no I/O.
//!
//! Layout: [`request`] (the create request and its tools), [`input`] (input items), [`output`]
//! (output items), [`response`] (the response object and other bodies), [`events`] (stream events),
//! [`error`] (the HTTP error envelope), `strict` (path-aware strict parsing).
//!
//! ```
//! use agentd_protocol::request::CreateRequest;
//!
//! let err = CreateRequest::parse(br#"{"input":"hi","tools":[{"type":"function","name":"f","strictt":true}]}"#)
//!     .unwrap_err();
//! assert_eq!(err.param.as_deref(), Some("tools[0].strictt"));
//! ```

pub mod error;
pub mod events;
pub mod input;
pub mod output;
pub mod request;
pub mod response;
mod strict;
pub mod validate;

pub use strict::RequestError;
