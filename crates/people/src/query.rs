//! What the model asks for: up to five free-text queries plus optional structured hints,
//! parsed leniently from the call's JSON (errors are texts for the model).

use serde_json::{Value, json};

/// Queries one call may run (Perplexity's people-search schema allows five).
pub const MAX_QUERIES: usize = 5;
/// The most people one call returns.
pub const MAX_LIMIT: usize = 10;
/// People returned when the call names no `limit`.
pub const DEFAULT_LIMIT: usize = 5;
/// Characters of one query or hint kept.
const MAX_TEXT_CHARS: usize = 200;

/// Structured hints; each narrows every query of the call.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Hints {
    pub name: Option<String>,
    pub title: Option<String>,
    pub company: Option<String>,
    pub school: Option<String>,
    pub skill: Option<String>,
    pub location: Option<String>,
}

impl Hints {
    pub fn is_empty(&self) -> bool {
        self.iter().next().is_none()
    }

    /// `(field, value)` of every hint given, in a fixed order.
    pub fn iter(&self) -> impl Iterator<Item = (Hint, &str)> {
        [
            (Hint::Name, &self.name),
            (Hint::Title, &self.title),
            (Hint::Company, &self.company),
            (Hint::School, &self.school),
            (Hint::Skill, &self.skill),
            (Hint::Location, &self.location),
        ]
        .into_iter()
        .filter_map(|(hint, value)| value.as_deref().map(|value| (hint, value)))
    }
}

/// The kinds of hint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hint {
    Name,
    Title,
    Company,
    School,
    Skill,
    Location,
}

impl Hint {
    pub fn key(self) -> &'static str {
        match self {
            Hint::Name => "name",
            Hint::Title => "title",
            Hint::Company => "company",
            Hint::School => "school",
            Hint::Skill => "skill",
            Hint::Location => "location",
        }
    }
}

/// One search as a back end receives it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Search {
    /// Free text (may be empty when hints say it all).
    pub text: String,
    pub hints: Hints,
    /// People wanted, 1..=[`MAX_LIMIT`].
    pub limit: usize,
    /// The project of the request (the embedded directory is per project).
    pub project: String,
}

impl Search {
    /// The words of the text, lower case, letters and digits only, without repeats.
    pub fn words(&self) -> Vec<String> {
        words(&self.text)
    }
}

/// The words of `text`, lower case (letters and digits; anything else separates).
pub fn words(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for word in text.split(|c: char| !c.is_alphanumeric()) {
        let word = word.to_lowercase();
        if !word.is_empty() && !out.contains(&word) {
            out.push(word);
        }
        if out.len() == 32 {
            break;
        }
    }
    out
}

/// `people` with those matching most words of the search (in name, title, company,
/// department, location, education or skills) first, at most `search.limit` (for
/// directories that do not rank).
pub fn rank(people: Vec<crate::record::Person>, search: &Search) -> Vec<crate::record::Person> {
    let wanted = search.words();
    let mut scored: Vec<(usize, usize, crate::record::Person)> = people
        .into_iter()
        .enumerate()
        .map(|(order, person)| {
            let have = words(&format!("{} {}", person.headline(), person.snippet()));
            let score = wanted.iter().filter(|w| have.contains(w)).count();
            (score, order, person)
        })
        .collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    scored
        .into_iter()
        .take(search.limit)
        .map(|(_, _, person)| person)
        .collect()
}

/// A parsed call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    /// 0 to 5 queries; at least one query or one hint.
    pub queries: Vec<String>,
    pub hints: Hints,
    pub limit: usize,
}

const USAGE: &str = "Call people_search with {\"queries\": [\"role or name, company, place\"]} \
(1 to 5 queries) and optionally name, title, company, school, skill, location and limit (1 to 10).";

fn one_line(text: &str) -> String {
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    text.chars().take(MAX_TEXT_CHARS).collect()
}

/// Parses the model's arguments.
pub fn parse(arguments: &str) -> Result<Call, String> {
    let value: Value = serde_json::from_str(arguments).map_err(|err| {
        format!("people_search: the arguments are not valid JSON ({err}). {USAGE}")
    })?;
    let Value::Object(object) = value else {
        return Err(format!(
            "people_search: the arguments must be an object. {USAGE}"
        ));
    };
    let raw = object.get("queries").or_else(|| object.get("query"));
    let items: Vec<&Value> = match raw {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items.iter().collect(),
        Some(single @ Value::String(_)) => vec![single],
        Some(_) => {
            return Err(format!(
                "people_search: \"queries\" must be an array of strings. {USAGE}"
            ));
        }
    };
    let mut queries: Vec<String> = Vec::new();
    for item in items {
        let Value::String(text) = item else {
            return Err(format!(
                "people_search: every query must be a string. {USAGE}"
            ));
        };
        let text = one_line(text);
        if !text.is_empty() && !queries.contains(&text) {
            queries.push(text);
        }
    }
    if queries.len() > MAX_QUERIES {
        return Err(format!(
            "people_search takes at most {MAX_QUERIES} queries per call, got {}. Keep the most \
             useful ones or split them over several calls.",
            queries.len()
        ));
    }
    let hint = |key: &str| -> Result<Option<String>, String> {
        match object.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(text)) => Ok(Some(one_line(text)).filter(|t| !t.is_empty())),
            Some(_) => Err(format!(
                "people_search: \"{key}\" must be a string. {USAGE}"
            )),
        }
    };
    let hints = Hints {
        name: hint("name")?,
        title: hint("title")?,
        company: hint("company")?,
        school: hint("school")?,
        skill: hint("skill")?,
        location: hint("location")?,
    };
    let limit = match object.get("limit") {
        None | Some(Value::Null) => DEFAULT_LIMIT,
        Some(Value::Number(n)) => match n.as_u64() {
            Some(n) if n >= 1 => (n as usize).min(MAX_LIMIT),
            _ => return Err(format!("people_search: \"limit\" must be 1 to 10. {USAGE}")),
        },
        Some(_) => {
            return Err(format!(
                "people_search: \"limit\" must be a number. {USAGE}"
            ));
        }
    };
    if queries.is_empty() && hints.is_empty() {
        return Err(format!(
            "people_search: no query and no hint was given. {USAGE}"
        ));
    }
    Ok(Call {
        queries,
        hints,
        limit,
    })
}

/// The tool's parameters (JSON Schema), as offered to the model.
pub fn parameters() -> Value {
    let hint = |what: &str| json!({"type": "string", "description": what});
    json!({
        "type": "object",
        "properties": {
            "queries": {
                "type": "array",
                "description": "1 to 5 searches for people, each a role, name, company, field or place in a few words (e.g. \"head of design at Figma\", \"machine learning researchers Stanford\").",
                "items": {"type": "string"},
                "minItems": 1,
                "maxItems": MAX_QUERIES,
            },
            "name": hint("Only people with this name."),
            "title": hint("Only people whose job title contains this (e.g. \"data engineer\")."),
            "company": hint("Only people at this company or organization."),
            "school": hint("Only people who studied at this school or university."),
            "skill": hint("Only people with this skill (e.g. \"Kubernetes\")."),
            "location": hint("Only people in this city, region or country."),
            "limit": {
                "type": "integer",
                "description": "How many people to return (1 to 10, default 5).",
                "minimum": 1,
                "maximum": MAX_LIMIT,
            },
        },
        "required": ["queries"],
        "additionalProperties": false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_hints_and_limits() {
        let call = parse(
            r#"{"queries":["head of design  Figma","head of design  Figma",""],"title":"designer","limit":50}"#,
        )
        .unwrap();
        assert_eq!(call.queries, vec!["head of design Figma"]);
        assert_eq!(call.hints.title.as_deref(), Some("designer"));
        assert_eq!(call.limit, MAX_LIMIT);
        let hints_only = parse(r#"{"company":"Acme"}"#).unwrap();
        assert!(hints_only.queries.is_empty());
        assert_eq!(hints_only.limit, DEFAULT_LIMIT);
        assert_eq!(parse(r#"{"query":"x"}"#).unwrap().queries, vec!["x"]);
        for bad in [
            "",
            "[]",
            "{}",
            r#"{"queries":[]}"#,
            r#"{"queries":[1]}"#,
            r#"{"queries":["a","b","c","d","e","f"]}"#,
            r#"{"queries":["a"],"limit":0}"#,
            r#"{"queries":["a"],"title":3}"#,
        ] {
            let err = parse(bad).unwrap_err();
            assert!(err.contains("people_search"), "{bad}: {err}");
        }
    }

    #[test]
    fn words_split_on_punctuation() {
        assert_eq!(words("Ada's ML, ml-ops"), vec!["ada", "s", "ml", "ops"]);
    }
}
