//! The one error code table of agentd: every error any layer answers, with its HTTP status, its
//! `type`, and the `code` string it carries when it ends a run in-band (`response.error`,
//! `response.failed`, a failed background run).
//!
//! Meilisearch's `Code` is the model: one enum, one row per code, and every error type of every
//! crate maps to a row. The server only turns [`Code::status`] into an HTTP status.

use protocol::response::ErrorInfo;

macro_rules! codes {
    ($($(#[$doc:meta])* $variant:ident => $status:literal, $kind:literal, $in_band:literal;)*) => {
        /// An error code (one row of the table).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Code {
            $($(#[$doc])* $variant,)*
        }

        impl Code {
            /// Every code, in table order.
            pub const ALL: &'static [Code] = &[$(Code::$variant,)*];

            /// The HTTP status an answer with this code has.
            pub fn status(self) -> u16 {
                match self {
                    $(Code::$variant => $status,)*
                }
            }

            /// The error `type` (HTTP envelope and in-band errors alike).
            pub fn kind(self) -> &'static str {
                match self {
                    $(Code::$variant => $kind,)*
                }
            }

            /// The `code` string of an in-band error (`response.error.code`): OpenAI's
            /// `ResponseError` codes where one fits, so its SDKs accept them.
            pub fn in_band(self) -> &'static str {
                match self {
                    $(Code::$variant => $in_band,)*
                }
            }
        }
    };
}

codes! {
    /// The request is malformed or breaks a rule.
    InvalidRequest => 400, "invalid_request", "invalid_request";
    /// A search filter's date is not a date.
    InvalidDateFormat => 400, "invalid_date_format", "invalid_request";
    /// A search domain filter is malformed.
    InvalidSearchDomainFilter => 400, "invalid_search_domain_filter", "invalid_request";
    /// The model id cannot be served.
    InvalidModel => 400, "invalid_model", "invalid_request";
    /// WebSocket mode: `previous_response_id` names no response this connection may continue
    /// (a `store: false` response made on another connection, or one evicted after a failed
    /// continuation).
    PreviousResponseNotFound => 400, "previous_response_not_found", "invalid_request";
    /// WebSocket mode: the connection reached its lifetime (`http.websocket_lifetime_secs`).
    WebsocketConnectionLimitReached => 400, "websocket_connection_limit_reached", "invalid_request";
    /// No key, or a key the store does not know.
    Unauthorized => 401, "unauthorized", "unauthorized";
    /// Refused for where it comes from: in open mode, a request from a web page of another
    /// origin or for a host name that is not this server's (DNS rebinding).
    Forbidden => 403, "forbidden", "forbidden";
    /// The key is known but its role may not do this (a `member` key on an admin route).
    PermissionDenied => 403, "permission_denied", "permission_denied";
    /// No such object in this project (or no such route).
    NotFound => 404, "not_found", "not_found";
    /// The object already exists (a connector id or project name taken).
    Conflict => 409, "conflict", "invalid_request";
    /// The route exists, but not with this method.
    MethodNotAllowed => 405, "method_not_allowed", "invalid_request";
    /// The client took too long to send its request (head or body).
    RequestTimeout => 408, "request_timeout", "invalid_request";
    /// The body is larger than the server takes.
    PayloadTooLarge => 413, "payload_too_large", "invalid_request";
    /// The body's `Content-Type` is not the JSON the route reads.
    UnsupportedMediaType => 415, "unsupported_media_type", "invalid_request";
    /// An MCP server could not be reached or listed when the run started.
    ExternalConnector => 424, "external_connector_error", "external_connector_error";
    /// Too many background runs are waiting.
    RateLimited => 429, "request_rate_limit_exceeded", "rate_limit_exceeded";
    /// Something that should not fail did (details are logged, not answered).
    Internal => 500, "internal_error", "server_error";
    /// The capability is not built yet.
    NotImplemented => 501, "not_implemented", "server_error";
    /// The model provider failed (in-band: the run ends `failed`).
    Provider => 502, "bad_gateway", "server_error";
    /// The model provider refused for its rate limit (in-band).
    ProviderRateLimited => 502, "bad_gateway", "rate_limit_exceeded";
    /// The model's final answer does not match the requested structured output (in-band).
    StructuredOutput => 502, "upstream_structured_output_failed", "upstream_structured_output_failed";
    /// The process running the run stopped before it ended (in-band).
    RunLost => 500, "server_error", "server_error";
}

impl Code {
    /// The code of a request error's `type` (`RequestError::kind`), `InvalidRequest` by default.
    pub fn of_request_kind(kind: Option<&str>) -> Code {
        match kind {
            Some("invalid_date_format") => Code::InvalidDateFormat,
            Some("invalid_search_domain_filter") => Code::InvalidSearchDomainFilter,
            _ => Code::InvalidRequest,
        }
    }

    /// The in-band error object for a run that ended with this code.
    pub fn error_info(self, message: impl Into<String>) -> ErrorInfo {
        ErrorInfo {
            message: message.into(),
            kind: Some(self.kind().to_owned()),
            code: Some(self.in_band().to_owned()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_has_one_row_and_request_kinds_round_trip() {
        for code in Code::ALL {
            assert!((400..600).contains(&code.status()), "{code:?}");
            assert!(!code.kind().is_empty() && !code.in_band().is_empty());
        }
        for code in [Code::InvalidDateFormat, Code::InvalidSearchDomainFilter] {
            assert_eq!(Code::of_request_kind(Some(code.kind())), code);
        }
        assert_eq!(Code::of_request_kind(None), Code::InvalidRequest);
        let info = Code::Provider.error_info("boom");
        assert_eq!(info.kind.as_deref(), Some("bad_gateway"));
        assert_eq!(info.code.as_deref(), Some("server_error"));
    }
}
