//! `people_search`, one of agentd's built-in tools: the hosted tool ([`PeopleSearch`], an
//! [`engine::hosted::HostedTool`]) and the people directories behind it, including an
//! embedded directory (SQLite FTS5) that `agentd people import` fills. The server builds
//! one [`People`] at start-up and a [`PeopleSearch`] per request. It depends on `engine`
//! (the port), `protocol` (the wire types) and `netguard` only.
//!
//! One call takes up to five free-text queries and optional hints (name, title, company,
//! school, skill, location, `limit` ≤ 10), asks every configured back end at once, merges
//! the answers (round robin, one entry per profile URL, at most `limit`), and returns one
//! `people_search_results` item in the `search_results` entry shape (`url` the profile
//! page or `urn:agentd:people:{source}:{id}`, `title` "Name — Title, Company", `snippet`
//! department, location, education, skills and source), a numbered text for the model,
//! one citable source per person and `("search_people", queries answered)`. With no back
//! end configured and no directory imported for the caller's project the tool is refused (400
//! naming what to set, checked when the request is validated: [`PeopleSearch::check`]);
//! it never invents people. A failing back end is a note for the model, never a failed run.
//!
//! # Privacy by construction
//! Every back end maps into one allow-listed [`Person`] (name, title, company,
//! department, location, education, skills, profile URL, source, last updated; a
//! directory import's `summary` too). Back ends decode only those fields from an answer
//! (serde skips the rest), directories are asked for only those attributes, and free text
//! loses e-mail addresses and phone numbers on its way in: personal e-mails and phones,
//! street addresses, birth dates, gender and the like never reach the model, the items,
//! the events, the store or the logs. Profile URLs that are not `http(s)` or that the
//! network guard refuses (private IP literals) are dropped for the URN. Logs carry
//! counts, lengths and timings, never query text or people.
//!
//! # Back ends
//! | back end | configured by | request |
//! | --- | --- | --- |
//! | embedded directory | `agentd people import` (`<data_dir>/people.sqlite`, or the PostgreSQL store) | FTS5, bm25 (name 10, title 5, company 5, skills 3); `ts_rank` with the same weights |
//! | People Data Labs | `PDL_API_KEY` | `POST /v5/person/search` (Elasticsearch query) |
//! | Apollo | `APOLLO_API_KEY` | `POST /api/v1/mixed_people/api_search` |
//! | GitHub | `GITHUB_TOKEN` or `github = true` | `GET /search/users`, `GET /users/{login}` |
//! | ORCID | `orcid = true` | `GET /v3.0/expanded-search/` |
//! | SCIM 2.0 | `[tools.people_search.scim]` | `GET {base}/Users?filter=…` |
//! | LDAP | `[tools.people_search.ldap]` | subtree search, RFC 4515 filter, values escaped |
//!
//! Every HTTP request goes through a client from the network guard (20 s, 4 MiB cap).
//!
//! # Layout
//! - `record`: [`Person`] and the text scrubbing.
//! - `query`: the model's arguments, the hints, [`Search`], ranking for unranked sources.
//! - `backend`: the [`Directory`] port and [`DirectoryError`].
//! - `http`: the guarded client, capped answers, error and rate-limit mapping.
//! - `directory`: the embedded [`LocalDirectory`] (`directory_pg`: in PostgreSQL); `import`: reading CSV / JSON Lines.
//! - `pdl`, `apollo`, `github`, `orcid`, `scim`, `ldap`: the back ends.
//! - `select`: [`PeopleSettings`] and [`People`].
//! - `tool`: [`PeopleSearch`].
//!
//! # Example
//! ```
//! # #[tokio::main]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use engine::hosted::HostedTool as _;
//! use people::{LocalDirectory, People, PeopleSearch, import};
//!
//! // `agentd people import` does this: read the export, store it for a project.
//! let csv = "id,name,title,company,personal_email\n7,Ada Lovelace,Engineer,Engines Ltd,ada@home.example\n";
//! let rows = import::read_csv("people.csv", csv.as_bytes(), &[])?;
//! let directory = LocalDirectory::in_memory().await?;
//! directory.import("project-1", &rows.people, false).await?;
//!
//! // The server: one People for the process, a tool per request.
//! let people = Arc::new(People::with_directories(Vec::new(), Some(directory), netguard::Policy::strict()));
//! let tool = PeopleSearch::new(people, 0)?;
//! assert_eq!(tool.spec().name, people::TOOL_NAME);
//! # Ok(())
//! # }
//! ```

mod apollo;
mod backend;
mod directory;
mod directory_pg;
mod directory_row;
mod github;
mod http;
pub mod import;
mod ldap;
mod orcid;
mod pdl;
mod query;
mod record;
mod scim;
mod select;
mod tool;

pub use apollo::Apollo;
pub use backend::{Directory, DirectoryError};
pub use directory::LocalDirectory;
pub use directory_pg::SCHEMA_NAME as POSTGRES_SCHEMA;
pub use github::GitHub;
pub use ldap::{DEFAULT_OBJECT_FILTER, Ldap, LdapSettings};
pub use orcid::Orcid;
pub use pdl::Pdl;
pub use query::{Hints, MAX_LIMIT, MAX_QUERIES, Search};
pub use record::Person;
pub use scim::Scim;
pub use select::{
    HOW_TO_CONFIGURE, People, PeopleSettings, ScimSettings, forget_project, open_directory,
};
pub use tool::{BILLING_KEY, PeopleSearch, TOOL_NAME};

/// The public endpoints' bases, for operators' documentation and overrides.
pub mod defaults {
    pub use crate::apollo::DEFAULT_BASE_URL as APOLLO_BASE_URL;
    pub use crate::github::DEFAULT_BASE_URL as GITHUB_BASE_URL;
    pub use crate::orcid::DEFAULT_BASE_URL as ORCID_BASE_URL;
    pub use crate::pdl::DEFAULT_BASE_URL as PDL_BASE_URL;
}
