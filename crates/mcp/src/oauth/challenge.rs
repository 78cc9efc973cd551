//! The `Bearer` challenge of a `WWW-Authenticate` header (RFC 9110 §11.6.1, RFC 6750 §3,
//! RFC 9728 §5.1): `resource_metadata`, `scope`, `error`, `error_description`.

/// What an MCP server said when it refused a request (401 or 403).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Challenge {
    /// RFC 9728 §5.1: where the server's protected resource metadata is.
    pub resource_metadata: Option<String>,
    /// RFC 6750 §3: the scopes the request needs (space separated).
    pub scope: Option<String>,
    /// RFC 6750 §3.1: `invalid_token`, `insufficient_scope`, ...
    pub error: Option<String>,
    /// A human-readable explanation from the server.
    pub error_description: Option<String>,
}

impl Challenge {
    /// The parameters of the first `Bearer` challenge in a `WWW-Authenticate` value (which
    /// may list several challenges, e.g. `Basic realm="x", Bearer scope="a"`). A header
    /// without a `Bearer` challenge, or one that cannot be parsed, gives an empty challenge.
    pub fn parse(header: &str) -> Challenge {
        let mut challenge = Challenge::default();
        let mut in_bearer = false;
        let mut seen_bearer = false;
        let mut lexer = Lexer::new(header);
        loop {
            lexer.skip(|c| c == ' ' || c == '\t' || c == ',');
            let Some(token) = lexer.token() else {
                if lexer.at_end() {
                    break;
                }
                // Not a token character: skip it and carry on.
                lexer.bump();
                continue;
            };
            lexer.skip(|c| c == ' ' || c == '\t');
            if lexer.eat('=') {
                lexer.skip(|c| c == ' ' || c == '\t');
                let value = lexer.value();
                if in_bearer {
                    let slot = match token.to_ascii_lowercase().as_str() {
                        "resource_metadata" => &mut challenge.resource_metadata,
                        "scope" => &mut challenge.scope,
                        "error" => &mut challenge.error,
                        "error_description" => &mut challenge.error_description,
                        _ => continue,
                    };
                    slot.get_or_insert(value);
                }
            } else {
                // A bare token is the scheme of a new challenge (Bearer challenges carry no
                // token68): only the first Bearer challenge's parameters are kept.
                let is_bearer = token.eq_ignore_ascii_case("bearer");
                in_bearer = is_bearer && !seen_bearer;
                seen_bearer |= is_bearer;
            }
        }
        challenge
    }

    /// The scopes of the challenge, if it names any.
    pub fn scope(&self) -> Option<&str> {
        self.scope
            .as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty())
    }

    /// Whether the server said the token lacks scopes (RFC 6750 `insufficient_scope`).
    pub fn is_insufficient_scope(&self) -> bool {
        self.error.as_deref() == Some("insufficient_scope")
    }
}

struct Lexer<'a> {
    chars: std::iter::Peekable<std::str::Chars<'a>>,
}

impl<'a> Lexer<'a> {
    fn new(text: &'a str) -> Self {
        Self {
            chars: text.chars().peekable(),
        }
    }

    fn at_end(&mut self) -> bool {
        self.chars.peek().is_none()
    }

    fn bump(&mut self) {
        self.chars.next();
    }

    fn eat(&mut self, c: char) -> bool {
        if self.chars.peek() == Some(&c) {
            self.chars.next();
            return true;
        }
        false
    }

    fn skip(&mut self, skip: impl Fn(char) -> bool) {
        while self.chars.peek().is_some_and(|c| skip(*c)) {
            self.chars.next();
        }
    }

    /// RFC 9110 `token` (tchar+).
    fn token(&mut self) -> Option<String> {
        let mut out = String::new();
        while let Some(&c) = self.chars.peek() {
            if !is_tchar(c) {
                break;
            }
            out.push(c);
            self.chars.next();
        }
        (!out.is_empty()).then_some(out)
    }

    /// A parameter value: a quoted-string (with `\` escapes) or a token.
    fn value(&mut self) -> String {
        if !self.eat('"') {
            return self.token().unwrap_or_default();
        }
        let mut out = String::new();
        while let Some(c) = self.chars.next() {
            match c {
                '"' => break,
                '\\' => {
                    if let Some(escaped) = self.chars.next() {
                        out.push(escaped);
                    }
                }
                other => out.push(other),
            }
        }
        out
    }
}

fn is_tchar(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~/".contains(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_mcp_challenges() {
        let c = Challenge::parse(
            r#"Bearer error="invalid_token", error_description="Missing Authorization header", resource_metadata="http://localhost:3000/.well-known/oauth-protected-resource/mcp""#,
        );
        assert_eq!(
            c,
            Challenge {
                resource_metadata: Some(
                    "http://localhost:3000/.well-known/oauth-protected-resource/mcp".into()
                ),
                scope: None,
                error: Some("invalid_token".into()),
                error_description: Some("Missing Authorization header".into()),
            }
        );
        let c = Challenge::parse(
            r#"Bearer error="insufficient_scope", scope="files:read files:write", resource_metadata="https://m.example/.well-known/oauth-protected-resource""#,
        );
        assert!(c.is_insufficient_scope());
        assert_eq!(c.scope(), Some("files:read files:write"));
    }

    #[test]
    fn bare_bearer_tokens_escapes_and_case() {
        assert_eq!(Challenge::parse("Bearer"), Challenge::default());
        assert_eq!(Challenge::parse(""), Challenge::default());
        let c = Challenge::parse(r#"bearer SCOPE=read realm="a \"quoted\" realm""#);
        assert_eq!(c.scope(), Some("read"));
        let c = Challenge::parse(r#"Bearer error_description="say \"hi\"\\", error=invalid_token"#);
        assert_eq!(c.error_description.as_deref(), Some(r#"say "hi"\"#));
        assert_eq!(c.error.as_deref(), Some("invalid_token"));
        assert!(!c.is_insufficient_scope());
    }

    #[test]
    fn only_the_bearer_challenge_counts() {
        let c = Challenge::parse(
            r#"Basic realm="x", scope="not-this", Bearer scope="this", resource_metadata="https://a/b", DPoP algs="ES256", scope="nor-this""#,
        );
        assert_eq!(c.scope(), Some("this"));
        assert_eq!(c.resource_metadata.as_deref(), Some("https://a/b"));
        // The first value of a repeated parameter wins.
        let c = Challenge::parse(r#"Bearer scope="a", scope="b""#);
        assert_eq!(c.scope(), Some("a"));
        // Garbage does not panic and yields what can be read.
        let c = Challenge::parse("Bearer @@ scope=\"x\" ;; error=\"unterminated");
        assert_eq!(c.scope(), Some("x"));
        assert_eq!(c.error.as_deref(), Some("unterminated"));
        let c = Challenge::parse(r#"Bearer scope="  ""#);
        assert_eq!(c.scope(), None);
    }
}
