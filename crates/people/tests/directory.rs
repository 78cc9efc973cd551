//! The embedded directory on both of its back ends (a SQLite file; PostgreSQL, the store
//! replicas share): the same import and searches give the same people in the same order
//! (the name weighs most), per project; what one process imports another finds; and the
//! tool is refused, when a request is validated, for a project with nobody imported.
//!
//! Each test listed in `matrix!` runs on both: `sqlite::name`, `postgres::name`. PostgreSQL is
//! found at `AGENTD_TEST_POSTGRES_URL` (default `postgres://postgres@127.0.0.1:5432/postgres`);
//! each test creates its own database and drops it. An unreachable server fails the tests with
//! a message saying so; they are never skipped.

#![expect(clippy::unwrap_used, reason = "test helpers fail loudly")]

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use engine::hosted::{CallContext, EventSink, HostedError, HostedTool, NoFiles, ToolOutcome};
use netguard::Policy;
use people::{LocalDirectory, People, PeopleSearch, PeopleSettings};
use pgschema::testdb::TestDatabase;
use protocol::events::EventData;
use serde_json::{Value, json};
use sqlx::Connection as _;

macro_rules! matrix {
    ($($name:ident),+ $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let db = super::TestDb::new(super::Backend::Sqlite).await;
                    super::$name(&db).await
                }
            )+
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let db = super::TestDb::new(super::Backend::Postgres).await;
                    super::$name(&db).await
                }
            )+
        }
    };
}

matrix!(
    imports_are_searched_per_project_with_names_first,
    what_one_process_imports_another_finds,
    a_project_with_nobody_imported_is_refused_when_validated,
);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Backend {
    Sqlite,
    Postgres,
}

/// A directory of one test and, on PostgreSQL, a database dropped with this value.
struct TestDb {
    backend: Backend,
    dir: PathBuf,
    postgres: Option<TestDatabase>,
}

impl TestDb {
    async fn new(backend: Backend) -> TestDb {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!(
            "agentd-people-directory-{}-{n}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let postgres = match backend {
            Backend::Sqlite => None,
            Backend::Postgres => Some(TestDatabase::create("agentd_people").await.unwrap()),
        };
        TestDb {
            backend,
            dir,
            postgres,
        }
    }

    /// The settings a server of this database has: the directory in the file, or in the
    /// shared database.
    fn settings(&self) -> PeopleSettings {
        PeopleSettings {
            directory_path: self.dir.join("people.sqlite"),
            directory_url: self.postgres.as_ref().map(|db| db.url().to_owned()),
            ..PeopleSettings::default()
        }
    }

    /// Opens the directory anew (a pool of its own, as another process would).
    async fn open(&self) -> LocalDirectory {
        people::open_directory(&self.settings()).await.unwrap()
    }

    /// Rows of the PostgreSQL table (`None` on SQLite).
    async fn postgres_rows(&self) -> Option<i64> {
        let url = self.postgres.as_ref()?.url();
        let mut conn = sqlx::PgConnection::connect(url).await.unwrap();
        let sql = format!("SELECT COUNT(*) FROM {}.people", people::POSTGRES_SCHEMA);
        let count: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
            .fetch_one(&mut conn)
            .await
            .unwrap();
        conn.close().await.unwrap();
        Some(count)
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

struct Events(Mutex<Vec<EventData>>);

impl EventSink for Events {
    fn emit(&self, event: EventData) {
        self.0.lock().unwrap().push(event);
    }
}

/// One call of the tool over `people` for `project`.
async fn call(people: Arc<People>, project: &str, arguments: Value) -> ToolOutcome {
    let tool = PeopleSearch::new(people, 0).unwrap();
    let events = Events(Mutex::new(Vec::new()));
    tool.call(
        &arguments.to_string(),
        CallContext {
            events: &events,
            next_source: 1,
            call_id: "call_1",
            conversation: "resp_1",
            project_id: project,
            files: &NoFiles,
        },
    )
    .await
}

fn titles(outcome: &ToolOutcome) -> Vec<String> {
    let items = serde_json::to_value(&outcome.items).unwrap();
    assert_eq!(items[0]["type"], "people_search_results", "{items}");
    items[0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["title"].as_str().unwrap().to_owned())
        .collect()
}

/// The server's view: the back ends its settings configure (the directory opened on first
/// use, as a server opens it).
fn server(db: &TestDb) -> Arc<People> {
    Arc::new(People::from_settings(&db.settings(), &Policy::strict(), Policy::strict()).unwrap())
}

const STAFF: &str = "id,name,title,company,department,location,skills,summary,profile_url,email\n\
    1,Marie Curie,Physicist,Institut du Radium,Research,Paris,radioactivity; chemistry,Two Nobel prizes,https://people.example/marie,marie@home.example\n\
    2,Pierre Dupont,Engineer,Acme,Ops,Paris,kubernetes,Worked with Marie on tooling,,\n\
    3,Ada Byron,Engineer,Acme,Platform,London,rust,Analytical engines,,\n\
    4,Grace Hopper,Rear Admiral,Navy,Computing,Arlington,cobol; marie,Compilers,,\n";

async fn import(db: &TestDb, project: &str, csv: &str) {
    let rows = people::import::read_csv("people.csv", csv.as_bytes(), &[]).unwrap();
    let directory = db.open().await;
    directory
        .import(project, &rows.people, false)
        .await
        .unwrap();
    directory.close().await;
}

async fn imports_are_searched_per_project_with_names_first(db: &TestDb) {
    import(db, "project-a", STAFF).await;
    import(db, "project-b", "name,title\nMarie Other,Secret Agent\n").await;
    assert_eq!(
        db.postgres_rows().await,
        (db.backend == Backend::Postgres).then_some(5)
    );
    let people = server(db);

    // A name match (weight 10) outranks a skill match (3), which outranks a summary
    // match (1); project-b's Marie is never seen from project-a.
    let found = call(people.clone(), "project-a", json!({"queries": ["marie"]})).await;
    assert_eq!(
        titles(&found),
        [
            "Marie Curie — Physicist, Institut du Radium",
            "Grace Hopper — Rear Admiral, Navy",
            "Pierre Dupont — Engineer, Acme",
        ]
    );
    // The personal e-mail column was dropped on the way in.
    assert!(
        !serde_json::to_string(&found.items)
            .unwrap()
            .contains("marie@home.example")
    );

    // A hint matches in its own column only, every word of it.
    let hinted = call(
        people.clone(),
        "project-a",
        json!({"queries": ["engineer"], "location": "London", "skill": "rust"}),
    )
    .await;
    assert_eq!(titles(&hinted), ["Ada Byron — Engineer, Acme"]);
    let paris = call(
        people.clone(),
        "project-a",
        json!({"queries": ["engineer"], "company": "paris"}),
    )
    .await;
    assert!(titles(&paris).is_empty(), "{:?}", titles(&paris));
    // Hints alone search too.
    let hints_only = call(people.clone(), "project-a", json!({"title": "physicist"})).await;
    assert_eq!(
        titles(&hints_only),
        ["Marie Curie — Physicist, Institut du Radium"]
    );

    let other = call(people, "project-b", json!({"queries": ["marie"]})).await;
    assert_eq!(titles(&other), ["Marie Other — Secret Agent"]);
}

async fn what_one_process_imports_another_finds(db: &TestDb) {
    // Process A (the CLI, or replica A) imports; process B, started before the import,
    // validates and finds the people at once.
    let replica_b = server(db);
    assert!(!replica_b.serves("shared").await);
    import(db, "shared", STAFF).await;
    assert!(replica_b.serves("shared").await);
    let after = call(replica_b, "shared", json!({"queries": ["hopper"]})).await;
    assert_eq!(titles(&after), ["Grace Hopper — Rear Admiral, Navy"]);
    // Importing the same ids again replaces them.
    import(db, "shared", STAFF).await;
    assert_eq!(db.open().await.count("shared").await.unwrap(), 4);
}

async fn a_project_with_nobody_imported_is_refused_when_validated(db: &TestDb) {
    import(db, "imported", STAFF).await;
    let people = server(db);
    PeopleSearch::check(&people, "imported", 2).await.unwrap();
    let Err(HostedError::Invalid(err)) = PeopleSearch::check(&people, "empty", 2).await else {
        unreachable!("a project with nobody imported must be refused");
    };
    assert_eq!(err.param.as_deref(), Some("tools[2]"));
    assert!(err.message.contains("people_search"), "{}", err.message);
    assert!(
        err.message
            .contains("agentd people import FILE.csv|FILE.jsonl --project NAME"),
        "{}",
        err.message
    );
    assert!(err.message.contains("PDL_API_KEY"), "{}", err.message);
    // A remote back end serves every project.
    let with_remote = PeopleSettings {
        orcid: true,
        ..db.settings()
    };
    let remote = People::from_settings(&with_remote, &Policy::strict(), Policy::strict()).unwrap();
    assert!(remote.serves("empty").await);
}
