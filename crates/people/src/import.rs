//! Reading a directory export the operator owns (`agentd people import FILE`): CSV with a
//! header row, or JSON Lines. Only the pinned columns are read (`id, name, title, company,
//! department, location, education, skills, profile_url, summary, updated_at`, any case),
//! plus the extra columns the operator names (`[tools.people_search] extra_columns`); every
//! other column (e-mail, phone, address, birth date, …) is ignored, so it never reaches the
//! directory. List columns (`education`, `skills`) are `;`-separated in CSV
//! (skills may also be `,`-separated) and strings or arrays in JSON.

use std::path::Path;

use serde_json::Value;

use crate::directory::SOURCE;
use crate::record::Person;

/// The columns read.
pub const COLUMNS: &[&str] = &[
    "id",
    "name",
    "title",
    "company",
    "department",
    "location",
    "education",
    "skills",
    "profile_url",
    "summary",
    "updated_at",
];

/// The largest file taken.
pub const MAX_FILE_BYTES: u64 = 256 * 1024 * 1024;

/// Why a file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error("{path}: {message}")]
    File { path: String, message: String },
    #[error("{path}, line {line}: {message}")]
    Line {
        path: String,
        line: u64,
        message: String,
    },
}

/// What a file held.
#[derive(Debug, Default)]
pub struct Imported {
    pub people: Vec<Person>,
    /// Rows without a name (skipped), by line.
    pub skipped: Vec<u64>,
}

/// One row's pinned columns.
#[derive(Default)]
struct Row {
    id: Option<String>,
    name: Option<String>,
    title: Option<String>,
    company: Option<String>,
    department: Option<String>,
    location: Option<String>,
    education: Vec<String>,
    skills: Vec<String>,
    profile_url: Option<String>,
    summary: Option<String>,
    updated_at: Option<String>,
    extra: Vec<(String, String)>,
}

impl Row {
    fn set(&mut self, column: &str, value: Value, extra: &[String]) {
        let text = || match &value {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        };
        match column.to_ascii_lowercase().as_str() {
            "id" => self.id = text(),
            "name" => self.name = text(),
            "title" => self.title = text(),
            "company" => self.company = text(),
            "department" => self.department = text(),
            "location" => self.location = text(),
            "education" => self.education = list(&value, &[';']),
            "skills" => self.skills = list(&value, &[';', ',']),
            "profile_url" => self.profile_url = text(),
            "summary" => self.summary = text(),
            "updated_at" => self.updated_at = text(),
            other => {
                if extra.iter().any(|e| e.eq_ignore_ascii_case(other))
                    && let Some(value) = text()
                {
                    self.extra.push((other.to_owned(), value));
                }
            }
        }
    }

    fn person(self) -> Option<Person> {
        let name = self.name?;
        let id = self
            .id
            .or_else(|| self.profile_url.clone())
            .unwrap_or_default();
        Some(
            Person::new(SOURCE, &id, &name)?
                .title(self.title.as_deref())
                .company(self.company.as_deref())
                .department(self.department.as_deref())
                .location(&[self.location.as_deref()])
                .education(self.education.iter().map(String::as_str))
                .skills(self.skills.iter().map(String::as_str))
                .profile_url(self.profile_url.as_deref())
                .summary(self.summary.as_deref())
                .extra(self.extra.iter().map(|(c, v)| (c.as_str(), v.as_str())))
                .last_updated(self.updated_at.as_deref()),
        )
    }
}

/// A list column: a string split on `separators`, or an array of strings (objects with
/// `school`/`degree` or `name` are joined).
fn list(value: &Value, separators: &[char]) -> Vec<String> {
    match value {
        Value::String(text) => text
            .split(separators)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect(),
        Value::Array(items) => items
            .iter()
            .filter_map(|item| match item {
                Value::String(s) => Some(s.clone()),
                Value::Object(map) => {
                    let parts: Vec<&str> = ["school", "degree", "name"]
                        .iter()
                        .filter_map(|key| map.get(*key).and_then(Value::as_str))
                        .collect();
                    (!parts.is_empty()).then(|| parts.join(", "))
                }
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// Reads a `.csv` or `.jsonl` / `.ndjson` file; `extra` names the further columns to keep.
pub async fn read_file(path: &Path, extra: &[String]) -> Result<Imported, ImportError> {
    let shown = path.display().to_string();
    let file_error = |message: String| ImportError::File {
        path: shown.clone(),
        message,
    };
    let metadata = tokio::fs::metadata(path)
        .await
        .map_err(|err| file_error(err.to_string()))?;
    if metadata.len() > MAX_FILE_BYTES {
        return Err(file_error(format!("larger than {MAX_FILE_BYTES} bytes")));
    }
    let bytes = tokio::fs::read(path)
        .await
        .map_err(|err| file_error(err.to_string()))?;
    let extension = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or_default()
        .to_ascii_lowercase();
    match extension.as_str() {
        "csv" => read_csv(&shown, &bytes, extra),
        "jsonl" | "ndjson" => read_jsonl(&shown, &bytes, extra),
        _ => Err(file_error(
            "expected a .csv or .jsonl file (by its extension)".to_owned(),
        )),
    }
}

/// Reads CSV with a header row.
pub fn read_csv(path: &str, bytes: &[u8], extra: &[String]) -> Result<Imported, ImportError> {
    let mut reader = csv::ReaderBuilder::new()
        .flexible(true)
        .trim(csv::Trim::All)
        .from_reader(bytes);
    let headers = reader
        .headers()
        .map_err(|err| ImportError::File {
            path: path.to_owned(),
            message: format!("no header row: {err}"),
        })?
        .clone();
    if !headers.iter().any(|h| h.eq_ignore_ascii_case("name")) {
        return Err(ImportError::File {
            path: path.to_owned(),
            message: format!(
                "the header row has no \"name\" column (columns read: {})",
                COLUMNS.join(", ")
            ),
        });
    }
    let mut imported = Imported::default();
    for record in reader.records() {
        let record = record.map_err(|err| ImportError::Line {
            path: path.to_owned(),
            line: err.position().map_or(0, |p| p.line()),
            message: err.to_string(),
        })?;
        let line = record.position().map_or(0, |p| p.line());
        let mut row = Row::default();
        for (header, value) in headers.iter().zip(record.iter()) {
            if !value.is_empty() {
                row.set(header, Value::String(value.to_owned()), extra);
            }
        }
        match row.person() {
            Some(person) => imported.people.push(person),
            None => imported.skipped.push(line),
        }
    }
    Ok(imported)
}

/// Reads JSON Lines: one object per line, blank lines skipped.
pub fn read_jsonl(path: &str, bytes: &[u8], extra: &[String]) -> Result<Imported, ImportError> {
    let text = std::str::from_utf8(bytes).map_err(|_| ImportError::File {
        path: path.to_owned(),
        message: "not UTF-8 text".to_owned(),
    })?;
    let mut imported = Imported::default();
    for (index, line) in text.lines().enumerate() {
        let number = index as u64 + 1;
        if line.trim().is_empty() {
            continue;
        }
        let value: Value = serde_json::from_str(line).map_err(|err| ImportError::Line {
            path: path.to_owned(),
            line: number,
            message: err.to_string(),
        })?;
        let Value::Object(object) = value else {
            return Err(ImportError::Line {
                path: path.to_owned(),
                line: number,
                message: "not a JSON object".to_owned(),
            });
        };
        let mut row = Row::default();
        for (key, value) in object {
            row.set(&key, value, extra);
        }
        match row.person() {
            Some(person) => imported.people.push(person),
            None => imported.skipped.push(number),
        }
    }
    Ok(imported)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_reads_pinned_columns_only() {
        let csv = "ID,Name,Title,Company,personal_email,phone,skills,education,birth_date\n\
                   e1,Ada Lovelace,Engineer,Engines Ltd,ada@home.example,+44 20 7946 0958,\"Math, Poetry\",Cambridge; Home-schooled,1815-12-10\n\
                   e2,,Nameless,X,,,,,\n";
        let imported = read_csv("people.csv", csv.as_bytes(), &[]).unwrap();
        assert_eq!(imported.people.len(), 1);
        assert_eq!(imported.skipped, vec![3]);
        let ada = &imported.people[0];
        assert_eq!(ada.id(), "e1");
        assert_eq!(ada.skill_list(), ["Math", "Poetry"]);
        assert_eq!(ada.schools(), ["Cambridge", "Home-schooled"]);
        let shown = format!("{ada:?}");
        for secret in ["ada@home.example", "7946", "1815"] {
            assert!(!shown.contains(secret), "{secret} in {shown}");
        }
        let err = read_csv("x.csv", b"title\nboss\n", &[]).unwrap_err();
        assert!(err.to_string().contains("\"name\""), "{err}");
    }

    #[test]
    fn extra_columns_only_when_configured() {
        let csv = b"name,team,phone\nAda,Compilers (call +44 20 7946 0958),+44 20 7946 0958\n";
        let plain = read_csv("p.csv", csv, &[]).unwrap();
        assert!(plain.people[0].extra_fields().is_empty());
        let configured = read_csv("p.csv", csv, &["Team".to_owned()]).unwrap();
        assert_eq!(
            configured.people[0].extra_fields(),
            [("team".to_owned(), "Compilers (call)".to_owned())]
        );
        assert!(
            configured.people[0]
                .snippet()
                .contains("team: Compilers (call)")
        );
    }

    #[test]
    fn jsonl_takes_strings_and_arrays() {
        let text = "{\"name\":\"Grace Hopper\",\"skills\":[\"COBOL\"],\"education\":[{\"school\":\"Yale\",\"degree\":\"PhD\"}],\"ssn\":\"123-45-6789\"}\n\n{\"title\":\"no name\"}\n";
        let imported = read_jsonl("p.jsonl", text.as_bytes(), &[]).unwrap();
        assert_eq!(imported.people.len(), 1);
        assert_eq!(imported.skipped, vec![3]);
        assert_eq!(imported.people[0].schools(), ["Yale, PhD"]);
        let err = read_jsonl("p.jsonl", b"{\"name\":\"a\"}\nnot json\n", &[]).unwrap_err();
        assert!(err.to_string().contains("line 2"), "{err}");
    }
}
