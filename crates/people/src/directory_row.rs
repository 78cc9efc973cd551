//! One directory record as both back ends store it (`directory.rs` on SQLite,
//! `directory_pg.rs` on PostgreSQL): the allow-listed fields, lists joined, and back.

use crate::backend::DirectoryError;
use crate::record::Person;

/// `Person::source` of imported records.
pub const SOURCE: &str = "directory";

/// Separator of list fields (education, skills) in the table.
const LIST_SEPARATOR: &str = "; ";

pub(crate) fn store_error(err: sqlx::Error) -> DirectoryError {
    DirectoryError::Store(err.to_string())
}

/// One record as stored: the allow-listed fields, lists joined.
pub(crate) struct Row {
    pub(crate) id: String,
    pub(crate) name: String,
    pub(crate) title: String,
    pub(crate) company: String,
    pub(crate) department: String,
    pub(crate) location: String,
    pub(crate) education: String,
    pub(crate) skills: String,
    pub(crate) summary: String,
    pub(crate) extra: String,
    pub(crate) profile_url: Option<String>,
    pub(crate) updated_at: Option<String>,
}

impl Row {
    pub(crate) fn of(person: &Person) -> Row {
        Row {
            id: if person.id().is_empty() {
                person.urn()
            } else {
                person.id().to_owned()
            },
            name: person.name().to_owned(),
            title: person.job_title().unwrap_or_default().to_owned(),
            company: person.employer().unwrap_or_default().to_owned(),
            department: person.dept().unwrap_or_default().to_owned(),
            location: person.place().unwrap_or_default().to_owned(),
            education: person.schools().join(LIST_SEPARATOR),
            skills: person.skill_list().join(LIST_SEPARATOR),
            summary: person.about().unwrap_or_default().to_owned(),
            extra: person
                .extra_fields()
                .iter()
                .map(|(column, value)| format!("{column}: {value}"))
                .collect::<Vec<_>>()
                .join("\n"),
            profile_url: person.profile().map(str::to_owned),
            updated_at: person.updated().map(str::to_owned),
        }
    }

    /// The person again, as searches return it.
    pub(crate) fn person(self) -> Option<Person> {
        Some(
            Person::new(SOURCE, &self.id, &self.name)?
                .title(Some(&self.title))
                .company(Some(&self.company))
                .department(Some(&self.department))
                .location(&[Some(&self.location)])
                .education(self.education.split(LIST_SEPARATOR))
                .skills(self.skills.split(LIST_SEPARATOR))
                .summary(Some(&self.summary))
                .extra(self.extra.lines().filter_map(|line| line.split_once(": ")))
                .profile_url(self.profile_url.as_deref())
                .last_updated(self.updated_at.as_deref()),
        )
    }
}

/// Reads a stored row (the same columns on both back ends).
macro_rules! read_row {
    ($row:expr) => {{
        let row = $row;
        let text = |column: &str| -> Result<String, DirectoryError> {
            row.try_get::<String, _>(column).map_err(store_error)
        };
        let optional = |column: &str| -> Result<Option<String>, DirectoryError> {
            row.try_get::<Option<String>, _>(column)
                .map_err(store_error)
        };
        Ok::<_, DirectoryError>($crate::directory_row::Row {
            id: text("person_id")?,
            name: text("name")?,
            title: text("title")?,
            company: text("company")?,
            department: text("department")?,
            location: text("location")?,
            education: text("education")?,
            skills: text("skills")?,
            summary: text("summary")?,
            extra: text("extra")?,
            profile_url: optional("profile_url")?,
            updated_at: optional("updated_at")?,
        })
    }};
}
pub(crate) use read_row;
