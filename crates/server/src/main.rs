//! The `agentd` binary: parses the command line and wires the server.

use std::io::Write as _;
use std::path::PathBuf;

use agentd_server::config::{Config, LogFormat};
use clap::{Parser, Subcommand};

mod admin_cli;
mod common;

use common::{Common, load_config};

/// The global allocator (feature `jemalloc`, the default, or `mimalloc`). jemalloc's background
/// threads give freed memory back to the operating system, so RSS falls again after a spike of
/// open streams, which glibc's malloc and (measured) mimalloc did not (docs/benchmarks.md,
/// "Separate process, open streams and memory").
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// jemalloc with background threads purging freed pages (the default; mimalloc wins when both
/// features are on).
#[cfg(all(feature = "jemalloc", not(feature = "mimalloc")))]
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

#[derive(Parser)]
#[command(name = "agentd", version, about = "A self-hosted Agent API server")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the Agent API server.
    Serve {
        /// Listen address; port 0 picks a free port [env: AGENTD_LISTEN] [default: 127.0.0.1:8080]
        #[arg(long)]
        listen: Option<String>,
        #[command(flatten)]
        common: Common,
    },
    /// Manage API keys.
    Keys {
        #[command(subcommand)]
        command: KeysCommand,
    },
    /// Manage the local search index (what web_search uses when no search service is set).
    Index {
        #[command(subcommand)]
        command: IndexCommand,
    },
    /// Manage the embedded finance data (what finance_search uses offline).
    Finance {
        #[command(subcommand)]
        command: FinanceCommand,
    },
    /// Manage the people directory people_search answers from.
    People {
        #[command(subcommand)]
        command: PeopleCommand,
    },
    /// Apply the store's migrations and exit (replicas starting together migrate once anyway).
    Migrate {
        #[command(flatten)]
        common: Common,
    },
    /// Move a deployment between stores.
    Store {
        #[command(subcommand)]
        command: StoreCommand,
    },
    /// Manage projects (against the store directly).
    Projects {
        #[command(subcommand)]
        command: admin_cli::ProjectsCommand,
    },
    /// Manage saved MCP connectors (against the store directly).
    Connectors {
        #[command(subcommand)]
        command: Box<admin_cli::ConnectorsCommand>,
    },
    /// Manage the sealed secrets in the store.
    Secrets {
        #[command(subcommand)]
        command: admin_cli::SecretsCommand,
    },
    /// Ask any Agent API endpoint a question and stream the run (answer on stdout, progress on
    /// stderr; exit 0 completed, 1 failed or incomplete, 2 usage error).
    Ask(Box<ask::AskArgs>),
}

#[derive(Subcommand)]
enum StoreCommand {
    /// Copy every row of a SQLite store into a PostgreSQL database (migrated first). Rows
    /// already there are kept, so an interrupted copy can be run again. Stop the agentd that
    /// serves the SQLite store first.
    Copy {
        /// The SQLite store: sqlite:///path/to/agentd-data/agentd.db
        #[arg(long, value_name = "sqlite://…")]
        from: String,
        /// The PostgreSQL database: postgres://USER@HOST:PORT/DB
        #[arg(long, value_name = "postgres://…")]
        to: String,
    },
}

#[derive(Subcommand)]
enum FinanceCommand {
    /// Import the SEC's bulk files (company_tickers.json, companyfacts and submissions JSON,
    /// as files, directories or the SEC's zips) and a prices CSV into <data-dir>/finance.sqlite.
    Import {
        /// SEC files, zips or directories of them.
        #[arg(value_name = "PATH", required_unless_present = "prices")]
        paths: Vec<PathBuf>,
        /// Daily prices: a CSV with the header symbol,date,open,high,low,close,volume.
        #[arg(long, value_name = "FILE.csv")]
        prices: Option<PathBuf>,
        #[command(flatten)]
        common: Common,
    },
}

#[derive(Subcommand)]
enum PeopleCommand {
    /// Import a directory export you own: CSV with a header row, or JSON Lines. Columns read:
    /// id, name, title, company, department, location, education, skills, profile_url,
    /// summary, updated_at (any others, e-mails and phones included, are ignored).
    Import {
        /// The .csv or .jsonl file.
        #[arg(value_name = "FILE.csv|FILE.jsonl")]
        file: PathBuf,
        /// The project whose people_search sees these people (created when missing).
        #[arg(long, default_value = "default")]
        project: String,
        /// Remove the project's people that are not in this file.
        #[arg(long)]
        replace: bool,
        #[command(flatten)]
        common: Common,
    },
}

#[derive(Subcommand)]
enum IndexCommand {
    /// Add documents: http(s) URLs (fetched through the network guard), files, or directories.
    Add {
        /// URLs, files (text, Markdown, HTML) or directories to add.
        #[arg(required = true, value_name = "URL|PATH")]
        sources: Vec<String>,
        #[command(flatten)]
        common: Common,
    },
}

#[derive(Subcommand)]
enum KeysCommand {
    /// Create an API key and print it once (only its hash is stored).
    Create {
        /// The project the key belongs to (created when missing).
        #[arg(long, default_value = "default")]
        project: String,
        /// admin (uses and manages the project), member (uses it), or owner (a server-owner
        /// key: manages every project).
        #[arg(long, default_value = "admin")]
        role: String,
        /// A name to tell the key apart in listings.
        #[arg(long)]
        name: Option<String>,
        #[command(flatten)]
        common: Common,
    },
    /// List a project's keys (prefix, name, role, created, last used; never the key).
    List {
        #[arg(long, default_value = "default")]
        project: String,
        #[command(flatten)]
        common: Common,
    },
    /// Revoke a key by id.
    Revoke {
        key_id: String,
        #[arg(long, default_value = "default")]
        project: String,
        #[command(flatten)]
        common: Common,
    },
}

fn init_logging(format: LogFormat) {
    let spec = std::env::var("RUST_LOG").ok();
    agentd_server::logging::init(format, spec.as_deref());
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = term => {},
    }
    tracing::info!("shutdown signal received; finishing running requests");
}

/// `agentd index add`: every source is added or reported; the exit status says whether all were.
async fn index_add(config: &Config, sources: &[String]) -> anyhow::Result<()> {
    use search::LocalIndex;
    agentd_server::datadir::prepare(&config.data_dir, &[agentd_server::datadir::INDEX_FILE])?;
    let index = search::open_local_index(&config.web_search).await?;
    let policy = netguard::Policy::with_allowed(&config.allow_private)?;
    let client = LocalIndex::guarded_client(&policy)?;
    let mut failed = 0;
    for source in sources {
        let is_url = source.starts_with("http://") || source.starts_with("https://");
        let added = if is_url {
            index
                .add_url(&policy, &client, source)
                .await
                .map(|url| vec![url])
        } else {
            index.add_path(std::path::Path::new(source)).await
        };
        match added {
            Ok(urls) => {
                let mut out = std::io::stdout().lock();
                for url in urls {
                    writeln!(out, "added {url}")?;
                }
            }
            Err(err) => {
                failed += 1;
                writeln!(std::io::stderr(), "agentd index add: {source}: {err}")?;
            }
        }
    }
    let total = index.count().await?;
    writeln!(std::io::stdout(), "the index holds {total} documents")?;
    index.close().await;
    if failed > 0 {
        anyhow::bail!("{failed} of {} sources could not be added", sources.len());
    }
    Ok(())
}

/// `agentd people import`: reads the file, stores its people for the project.
async fn people_import(
    config: &Config,
    file: &std::path::Path,
    project: &str,
    replace: bool,
) -> anyhow::Result<()> {
    let imported = people::import::read_file(file, &config.people_search.extra_columns).await?;
    let store = agentd_server::open_store(config).await?;
    let project_id = store.ensure_project(project).await?;
    let directory = people::open_directory(&config.people_search).await?;
    let count = directory
        .import(&project_id, &imported.people, replace)
        .await?;
    let total = directory.count(&project_id).await?;
    directory.close().await;
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "imported {count} people into project \"{project}\"; it holds {total}"
    )?;
    if !imported.skipped.is_empty() {
        let lines: Vec<String> = imported.skipped.iter().map(u64::to_string).collect();
        writeln!(
            std::io::stderr(),
            "agentd people import: skipped rows without a name (lines {})",
            lines.join(", ")
        )?;
    }
    Ok(())
}

/// `agentd finance import`: what was imported on stdout, what was skipped on stderr.
async fn finance_import(
    config: &Config,
    paths: &[PathBuf],
    prices: Option<&std::path::Path>,
) -> anyhow::Result<()> {
    let store = finance::open_store(&config.finance_search).await?;
    let result = finance::import(&store, paths, prices).await;
    let counts = store.counts().await;
    store.close().await;
    let report = result?;
    for (file, why) in &report.skipped {
        writeln!(
            std::io::stderr(),
            "agentd finance import: skipped {file}: {why}"
        )?;
    }
    let counts = counts?;
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "imported {} tickers, {} companyfacts files, {} submissions files, {} older-filing pages, {} price rows",
        report.tickers, report.companyfacts, report.submissions, report.filing_pages, report.prices
    )?;
    writeln!(
        out,
        "the finance store holds {} tickers, {} companies, {} facts, {} filings, {} price rows ({})",
        counts.tickers,
        counts.companies,
        counts.facts,
        counts.filings,
        counts.prices,
        config.finance_search.store_path.display()
    )?;
    Ok(())
}

/// `agentd store copy`: every table, with what was read and what was new at the destination;
/// then the people directory and the finance store found next to the SQLite store file.
async fn store_copy(from: &str, to: &str) -> anyhow::Result<()> {
    if !from.starts_with("sqlite:") {
        anyhow::bail!("--from must be a sqlite:… URL");
    }
    if !store::is_postgres_url(to) {
        anyhow::bail!("--to must be a postgres://… URL");
    }
    let source = store::SqliteStore::connect(from).await?;
    let destination = store::PgStore::connect(to, store::PoolSettings::default()).await?;
    let report = store::copy(&source, &destination).await;
    source.close().await;
    destination.close().await;
    {
        let mut out = std::io::stdout().lock();
        for (table, read, inserted) in &report?.tables {
            writeln!(out, "{table}: {read} rows read, {inserted} new")?;
        }
    }
    // The people directory and the finance store live next to the SQLite store file; on
    // PostgreSQL they are schemas of the same database.
    let data_dir =
        sqlite_file(from).and_then(|file| file.parent().map(std::path::Path::to_path_buf));
    let Some(data_dir) = data_dir else {
        return Ok(());
    };
    let people_file = data_dir.join("people.sqlite");
    if people_file.is_file() {
        let source = people::LocalDirectory::open(&people_file).await?;
        let destination = people::LocalDirectory::open_postgres(to).await?;
        let copied = source.copy_into(&destination).await;
        source.close().await;
        destination.close().await;
        writeln!(
            std::io::stdout(),
            "people ({}): {} people copied",
            people::POSTGRES_SCHEMA,
            copied?
        )?;
    }
    let finance_file = data_dir.join("finance.sqlite");
    if finance_file.is_file() {
        let source = finance::LocalStore::open(&finance_file).await?;
        let destination = finance::LocalStore::open_postgres(to).await?;
        let copied = source.copy_into(&destination).await;
        source.close().await;
        destination.close().await;
        let copied = copied?;
        writeln!(
            std::io::stdout(),
            "finance ({}): {} tickers, {} companies, {} facts, {} filings, {} price rows copied",
            finance::POSTGRES_SCHEMA,
            copied.tickers,
            copied.companies,
            copied.facts,
            copied.filings,
            copied.prices
        )?;
    }
    Ok(())
}

/// The file of a `sqlite:` URL (`sqlite:///abs/path`, `sqlite://rel/path`, `sqlite:path`,
/// options after `?` left out); `None` for an in-memory database.
fn sqlite_file(url: &str) -> Option<std::path::PathBuf> {
    let rest = url.strip_prefix("sqlite:")?;
    let rest = rest.strip_prefix("//").unwrap_or(rest);
    let path = rest.split('?').next().unwrap_or_default();
    (!path.is_empty() && path != ":memory:").then(|| std::path::PathBuf::from(path))
}

fn main() -> anyhow::Result<()> {
    // `agentd sandbox-exec …` is the sandbox's Landlock helper (run inside bubblewrap): it
    // restricts itself and executes the program, before any thread or runtime starts.
    sandbox::restrict::dispatch();
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(run())
}

async fn run() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Serve { listen, common } => {
            let config = load_config(&common, listen)?;
            init_logging(config.log_format);
            // Every connection is a descriptor: take what the system allows.
            match agentd_server::fdlimit::raise_open_files_limit() {
                Ok(limit) => tracing::debug!(open_files = ?limit, "open-file limit"),
                Err(err) => tracing::warn!(%err, "cannot raise the open-file limit"),
            }
            let state = agentd_server::build_state(&config).await?;
            let listener = tokio::net::TcpListener::bind(config.listen).await?;
            let addr = listener.local_addr()?;
            {
                let mut out = std::io::stdout().lock();
                writeln!(out, "listening on http://{addr}")?;
                out.flush()?;
            }
            tracing::info!(%addr, providers = ?config.providers.iter().map(|p| &p.name).collect::<Vec<_>>(), "agentd serving");
            agentd_server::run(
                listener,
                agentd_server::app(state.clone()),
                config.connections,
                shutdown_signal(),
            )
            .await?;
            // Foreground requests are done; give background runs the same grace to end.
            state.engine.shutdown(agentd_server::SHUTDOWN_GRACE).await;
        }
        Command::Index {
            command: IndexCommand::Add { sources, common },
        } => {
            let config = load_config(&common, None)?;
            init_logging(config.log_format);
            index_add(&config, &sources).await?;
        }
        Command::Finance {
            command:
                FinanceCommand::Import {
                    paths,
                    prices,
                    common,
                },
        } => {
            let config = load_config(&common, None)?;
            init_logging(config.log_format);
            finance_import(&config, &paths, prices.as_deref()).await?;
        }
        Command::People {
            command:
                PeopleCommand::Import {
                    file,
                    project,
                    replace,
                    common,
                },
        } => {
            let config = load_config(&common, None)?;
            init_logging(config.log_format);
            people_import(&config, &file, &project, replace).await?;
        }
        Command::Migrate { common } => {
            let config = load_config(&common, None)?;
            init_logging(config.log_format);
            // Opening a store applies its migrations (under the advisory lock on PostgreSQL).
            agentd_server::open_store(&config).await?;
            writeln!(std::io::stdout(), "migrations applied")?;
        }
        Command::Store {
            command: StoreCommand::Copy { from, to },
        } => {
            init_logging(LogFormat::Text);
            store_copy(&from, &to).await?;
        }
        Command::Keys {
            command:
                KeysCommand::Create {
                    project,
                    role,
                    name,
                    common,
                },
        } => {
            admin_cli::create_key(&common, &project, &role, name).await?;
        }
        Command::Keys {
            command: KeysCommand::List { project, common },
        } => admin_cli::list_keys(&common, &project).await?,
        Command::Keys {
            command:
                KeysCommand::Revoke {
                    key_id,
                    project,
                    common,
                },
        } => admin_cli::revoke_key(&common, &project, &key_id).await?,
        Command::Projects { command } => admin_cli::projects(command).await?,
        Command::Connectors { command } => admin_cli::connectors(*command).await?,
        Command::Secrets { command } => admin_cli::secrets(command).await?,
        Command::Ask(args) => std::process::exit(i32::from(ask::run(*args).await)),
    }
    Ok(())
}
