//! What can end a session early (a run that ends `failed` is not an error: it is an outcome).

/// An error of `agentd ask`; each one is printed once, on stderr, and exits with status 1.
#[derive(Debug, thiserror::Error)]
pub enum AskError {
    #[error("cannot reach {url}: {source}")]
    Connect {
        url: String,
        #[source]
        source: reqwest::Error,
    },
    #[error("the server answered HTTP {status}: {message}")]
    Status { status: u16, message: String },
    #[error("the stream broke off: {0}")]
    Stream(String),
    #[error("the stream ended before the run did (no terminal event)")]
    Unfinished,
    #[error("the server's answer is not an Agent API response: {0}")]
    NotAResponse(String),
    #[error(
        "the run called the function {0:?}, which no --function answers (answer it from your own client)"
    )]
    UnknownFunction(String),
    #[error("the run kept asking for more after {0} continuations; stopping")]
    TooManyTurns(usize),
    #[error("function {name}: {message}")]
    Function { name: String, message: String },
    #[error("cannot write to the terminal: {0}")]
    Io(#[from] std::io::Error),
    #[error("cannot build the HTTP client: {0}")]
    Client(reqwest::Error),
}
