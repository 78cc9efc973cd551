//! The operator's settings and the set of back ends built from them ([`People`]), shared
//! for the life of the process. The caller reads the environment and config; this takes
//! values.

use std::collections::HashMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use netguard::Policy;
use tokio::sync::OnceCell;

use crate::apollo::Apollo;
use crate::backend::{Directory, DirectoryError};
use crate::directory::LocalDirectory;
use crate::github::GitHub;
use crate::ldap::{Ldap, LdapSettings};
use crate::orcid::Orcid;
use crate::pdl::Pdl;
use crate::scim::Scim;

/// `[tools.people_search.scim]`.
#[derive(Clone, Default)]
pub struct ScimSettings {
    /// E.g. `https://idp.example.com/scim/v2`; users are read from `{base_url}/Users`.
    pub base_url: String,
    /// The bearer token (from the variable the config names).
    pub token: String,
}

/// The operator's people_search settings. Empty strings count as unset.
#[derive(Clone, Default)]
pub struct PeopleSettings {
    /// `PDL_API_KEY`.
    pub pdl_api_key: Option<String>,
    /// `APOLLO_API_KEY`.
    pub apollo_api_key: Option<String>,
    /// `GITHUB_TOKEN` (optional for GitHub).
    pub github_token: Option<String>,
    /// GitHub user search on or off; unset means on when `GITHUB_TOKEN` is set.
    pub github: Option<bool>,
    /// The ORCID public API (keyless), on when true.
    pub orcid: bool,
    /// Base URL overrides (proxies, tests); the public endpoints when unset.
    pub pdl_base_url: Option<String>,
    pub apollo_base_url: Option<String>,
    pub github_base_url: Option<String>,
    pub orcid_base_url: Option<String>,
    pub scim: Option<ScimSettings>,
    pub ldap: Option<LdapSettings>,
    /// The embedded directory's file (`<data_dir>/people.sqlite`): it answers once
    /// `agentd people import` has created it.
    pub directory_path: PathBuf,
    /// A PostgreSQL database (`postgres://…`) holding the embedded directory instead of the
    /// file: the store's, when replicas share it.
    pub directory_url: Option<String>,
    /// Columns of an import kept and shown besides the pinned ones (`extra_columns`).
    pub extra_columns: Vec<String>,
}

fn set(value: &Option<String>) -> Option<&str> {
    value.as_deref().map(str::trim).filter(|v| !v.is_empty())
}

/// Keys, tokens and passwords stay out of logs.
impl fmt::Debug for PeopleSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let key = |value: &Option<String>| set(value).map(|_| "<redacted>");
        f.debug_struct("PeopleSettings")
            .field("pdl_api_key", &key(&self.pdl_api_key))
            .field("apollo_api_key", &key(&self.apollo_api_key))
            .field("github_token", &key(&self.github_token))
            .field("github", &self.github)
            .field("orcid", &self.orcid)
            .field("scim", &self.scim.as_ref().map(|s| &s.base_url))
            .field("ldap", &self.ldap)
            .field("directory_path", &self.directory_path)
            .field(
                "directory_url",
                &self.directory_url.as_ref().map(|_| "<postgres>"),
            )
            .field("extra_columns", &self.extra_columns)
            .finish()
    }
}

impl PeopleSettings {
    /// Whether GitHub user search is on.
    pub fn github_enabled(&self) -> bool {
        self.github.unwrap_or(set(&self.github_token).is_some())
    }
}

/// The embedded directory the settings name: in PostgreSQL when `directory_url` is set,
/// else the file at `directory_path` (`agentd people import` writes there).
pub async fn open_directory(settings: &PeopleSettings) -> Result<LocalDirectory, DirectoryError> {
    match set(&settings.directory_url) {
        Some(url) => LocalDirectory::open_postgres(url).await,
        None => LocalDirectory::open(&settings.directory_path).await,
    }
}

/// Removes the people of `project` from the embedded directory the settings name, when it
/// exists (a file not created yet holds nobody: it is not created); how many there were.
/// `agentd projects rm` uses it; a server uses [`People::forget_project`].
pub async fn forget_project(
    settings: &PeopleSettings,
    project: &str,
) -> Result<u64, DirectoryError> {
    if set(&settings.directory_url).is_none() && !settings.directory_path.is_file() {
        return Ok(0);
    }
    let directory = open_directory(settings).await?;
    let removed = directory.delete_project(project).await;
    directory.close().await;
    removed
}

/// What to set to make people_search work, for the refusal message.
pub const HOW_TO_CONFIGURE: &str = "import a directory for this project with \
`agentd people import FILE.csv|FILE.jsonl --project NAME`, \
or set PDL_API_KEY, APOLLO_API_KEY or GITHUB_TOKEN, or configure [tools.people_search] \
(github = true, orcid = true) or [tools.people_search.scim] or [tools.people_search.ldap]";

/// A source that could not be used, by name.
pub(crate) type SourceFailure = (&'static str, DirectoryError);

/// How long a "this project holds people" is reused (requests are validated with it). A
/// "holds nobody" is not kept: an import by another process counts at once.
const PROJECT_TTL: Duration = Duration::from_secs(5);

/// Projects whose answer is remembered at most (the map is emptied when full).
const PROJECTS_KEPT: usize = 1024;

/// The embedded directory: opened on first use, once `agentd people import` created it
/// (a file), or always (PostgreSQL).
struct Local {
    path: Option<PathBuf>,
    url: Option<String>,
    opened: OnceCell<LocalDirectory>,
    /// Projects known to hold people, and since when.
    projects: Mutex<HashMap<String, Instant>>,
}

impl Local {
    fn new(path: Option<PathBuf>, url: Option<String>, opened: OnceCell<LocalDirectory>) -> Local {
        Local {
            path,
            url,
            opened,
            projects: Mutex::new(HashMap::new()),
        }
    }

    fn remembered(&self, project: &str) -> bool {
        let projects = self.projects.lock().unwrap_or_else(|p| p.into_inner());
        projects
            .get(project)
            .is_some_and(|at| at.elapsed() < PROJECT_TTL)
    }

    fn remember(&self, project: &str) {
        let mut projects = self.projects.lock().unwrap_or_else(|p| p.into_inner());
        if projects.len() >= PROJECTS_KEPT {
            projects.clear();
        }
        projects.insert(project.to_owned(), Instant::now());
    }
}

/// The people_search back ends of this process.
pub struct People {
    remote: Vec<Arc<dyn Directory>>,
    local: Local,
    /// Checks every profile URL a back end returns (the request policy).
    url_policy: Policy,
}

impl People {
    /// Builds every configured back end. `backend_policy` is for the services' own
    /// addresses (allow the operator's SCIM host there when it is private);
    /// `url_policy` judges the profile URLs they return.
    pub fn from_settings(
        settings: &PeopleSettings,
        backend_policy: &Policy,
        url_policy: Policy,
    ) -> Result<People, DirectoryError> {
        let mut remote: Vec<Arc<dyn Directory>> = Vec::new();
        if let Some(scim) = &settings.scim {
            remote.push(Arc::new(Scim::new(
                &scim.base_url,
                &scim.token,
                backend_policy,
            )?));
        }
        if let Some(ldap) = &settings.ldap {
            remote.push(Arc::new(Ldap::new(ldap.clone())?));
        }
        if let Some(key) = set(&settings.pdl_api_key) {
            remote.push(Arc::new(Pdl::new(
                key,
                set(&settings.pdl_base_url),
                backend_policy,
            )?));
        }
        if let Some(key) = set(&settings.apollo_api_key) {
            remote.push(Arc::new(Apollo::new(
                key,
                set(&settings.apollo_base_url),
                backend_policy,
            )?));
        }
        if settings.github_enabled() {
            remote.push(Arc::new(GitHub::new(
                set(&settings.github_token),
                set(&settings.github_base_url),
                backend_policy,
            )?));
        }
        if settings.orcid {
            remote.push(Arc::new(Orcid::new(
                set(&settings.orcid_base_url),
                backend_policy,
            )?));
        }
        Ok(People {
            remote,
            local: Local::new(
                Some(settings.directory_path.clone()),
                set(&settings.directory_url).map(str::to_owned),
                OnceCell::new(),
            ),
            url_policy,
        })
    }

    /// Exactly these back ends (tests, embedders); `local` is the embedded directory.
    pub fn with_directories(
        remote: Vec<Arc<dyn Directory>>,
        local: Option<LocalDirectory>,
        url_policy: Policy,
    ) -> People {
        People {
            remote,
            local: Local::new(
                None,
                None,
                match local {
                    Some(directory) => OnceCell::new_with(Some(directory)),
                    None => OnceCell::new(),
                },
            ),
            url_policy,
        }
    }

    /// Whether the embedded directory exists (it was opened, it is in PostgreSQL, or its
    /// file is there).
    fn has_local(&self) -> bool {
        self.local.opened.initialized()
            || self.local.url.is_some()
            || self
                .local
                .path
                .as_deref()
                .is_some_and(|path| path.is_file())
    }

    /// Whether any back end can answer: a remote one is configured, or the embedded
    /// directory exists.
    pub fn is_configured(&self) -> bool {
        !self.remote.is_empty() || self.has_local()
    }

    /// Whether a call from `project` has a back end: a remote one is configured, or the
    /// embedded directory holds people of that project (a yes is reused for a few seconds). A directory that cannot be read counts as serving: the call then says
    /// that it failed, rather than the request being refused as unconfigured.
    pub async fn serves(&self, project: &str) -> bool {
        if !self.remote.is_empty() {
            return true;
        }
        if !self.has_local() {
            return false;
        }
        if self.local.remembered(project) {
            return true;
        }
        let holds = match self.local_directory().await {
            Ok(directory) => directory.has_people(project).await,
            Err(err) => Err(err),
        };
        match holds {
            Ok(holds) => {
                if holds {
                    self.local.remember(project);
                }
                holds
            }
            Err(err) => {
                tracing::warn!(error = %err, "people directory: cannot tell whether the project holds people");
                true
            }
        }
    }

    /// The embedded directory, opened on first use.
    async fn local_directory(&self) -> Result<&LocalDirectory, DirectoryError> {
        self.local
            .opened
            .get_or_try_init(|| async {
                match (&self.local.url, &self.local.path) {
                    (Some(url), _) => LocalDirectory::open_postgres(url).await,
                    (None, Some(path)) => LocalDirectory::open(path).await,
                    (None, None) => Err(DirectoryError::Store("no directory file".to_owned())),
                }
            })
            .await
    }

    /// Removes the people of `project` from the embedded directory, when it exists (the
    /// project is being deleted); how many there were.
    pub async fn forget_project(&self, project: &str) -> Result<u64, DirectoryError> {
        self.local
            .projects
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(project);
        if !self.has_local() {
            return Ok(0);
        }
        self.local_directory().await?.delete_project(project).await
    }

    /// The names of the back ends that answer now, in order (`directory` first when it
    /// exists).
    pub fn names(&self) -> Vec<&'static str> {
        let mut names = Vec::new();
        if self.has_local() {
            names.push(crate::directory::SOURCE);
        }
        names.extend(self.remote.iter().map(|d| d.name()));
        names
    }

    /// The back ends for one call: the embedded directory (opened on first use) and the
    /// remote ones. The directory failing to open is an error for that source only.
    pub(crate) async fn directories(&self) -> Vec<Result<Arc<dyn Directory>, SourceFailure>> {
        let mut out: Vec<Result<Arc<dyn Directory>, SourceFailure>> = Vec::new();
        if self.has_local() {
            let opened = self.local_directory().await;
            out.push(match opened {
                Ok(directory) => Ok(Arc::new(directory.clone()) as Arc<dyn Directory>),
                Err(err) => Err((crate::directory::SOURCE, err)),
            });
        }
        out.extend(self.remote.iter().cloned().map(Ok));
        out
    }

    pub(crate) fn url_policy(&self) -> &Policy {
        &self.url_policy
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_configured_means_nothing_answers() {
        let dir = std::env::temp_dir().join(format!("agentd-people-none-{}", std::process::id()));
        let settings = PeopleSettings {
            directory_path: dir.join("people.sqlite"),
            ..PeopleSettings::default()
        };
        let people = People::from_settings(&settings, &Policy::strict(), Policy::strict()).unwrap();
        assert!(!people.is_configured());
        assert!(people.names().is_empty());
        let with_token = PeopleSettings {
            github_token: Some("t".into()),
            orcid: true,
            ..settings.clone()
        };
        let people =
            People::from_settings(&with_token, &Policy::strict(), Policy::strict()).unwrap();
        assert_eq!(people.names(), ["github", "orcid"]);
        let off = PeopleSettings {
            github: Some(false),
            ..with_token
        };
        assert!(!off.github_enabled());
        assert!(!format!("{off:?}").contains("\"t\""));
    }
}
