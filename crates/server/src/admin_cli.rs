//! `agentd projects …`, `agentd keys list|revoke`, `agentd connectors …` and `agentd secrets
//! rotate`: the admin API's operations against the store directly, as the operator (every
//! right). Answers print as JSON (the admin API's own shapes); secret values are read from an
//! environment variable or standard input, never from the command line (other users can read a
//! process's arguments), and never printed.

use std::collections::BTreeMap;
use std::io::{Read as _, Write as _};

use clap::Subcommand;
use engine::{Caller, Engine};
use protocol::admin::{AuthorizationType, ConnectorCreate, ConnectorRotate, ConnectorTransport};
use protocol::request::{ApprovalMode, RequireApproval};
use secrecy::SecretString;

use crate::common::Common;

#[derive(Subcommand)]
pub enum ProjectsCommand {
    /// List the projects.
    List {
        #[command(flatten)]
        common: Common,
    },
    /// Create a project.
    Create {
        name: String,
        #[command(flatten)]
        common: Common,
    },
    /// Rename a project.
    Rename {
        name: String,
        new_name: String,
        #[command(flatten)]
        common: Common,
    },
    /// Delete a project with everything it owns (keys, responses, files, connectors, the people
    /// imported into it).
    Rm {
        name: String,
        #[command(flatten)]
        common: Common,
    },
}

/// Where a secret comes from (never the command line itself).
#[derive(clap::Args, Clone, Default)]
pub struct SecretArgs {
    /// Read the bearer token from this environment variable.
    #[arg(long, value_name = "VAR")]
    authorization_env: Option<String>,
    /// Read the bearer token from standard input.
    #[arg(long, conflicts_with = "authorization_env")]
    authorization_stdin: bool,
    /// A header whose value is read from an environment variable: NAME=VAR (repeatable).
    #[arg(long = "header-env", value_name = "NAME=VAR")]
    header_env: Vec<String>,
}

#[derive(Subcommand)]
pub enum ConnectorsCommand {
    /// Save a connector.
    Add {
        /// The project (name or id).
        #[arg(long, default_value = "default")]
        project: String,
        /// connector_[a-z0-9_]{1,48}; generated when omitted.
        #[arg(long)]
        id: Option<String>,
        #[arg(long)]
        label: String,
        #[arg(long)]
        url: String,
        /// auto, streamable_http or sse.
        #[arg(long, default_value = "auto")]
        transport: String,
        #[arg(long)]
        description: Option<String>,
        /// Repeatable; none: every tool.
        #[arg(long = "allowed-tool")]
        allowed_tools: Vec<String>,
        /// always or never.
        #[arg(long)]
        require_approval: Option<String>,
        /// Offer the tools up front instead of through tool search.
        #[arg(long)]
        eager: bool,
        /// Bound of connecting, listing and each call of a tool, in seconds.
        #[arg(long)]
        timeout: Option<u32>,
        /// Lend a credential to the sandbox: VAR=authorization or VAR=headers.NAME (repeatable).
        #[arg(long = "sandbox-env", value_name = "VAR=SOURCE")]
        sandbox_env: Vec<String>,
        /// The server uses OAuth: connect it afterwards with
        /// `POST /v1/admin/connectors/{id}/oauth/start` (an admin in a browser).
        #[arg(long)]
        oauth: bool,
        #[command(flatten)]
        secrets: SecretArgs,
        #[command(flatten)]
        common: Common,
    },
    /// List the project's connectors.
    List {
        #[arg(long, default_value = "default")]
        project: String,
        #[command(flatten)]
        common: Common,
    },
    /// Show one connector (credentials as set/fingerprint only).
    Show {
        id: String,
        #[arg(long, default_value = "default")]
        project: String,
        #[command(flatten)]
        common: Common,
    },
    /// Replace a connector's credentials.
    Rotate {
        id: String,
        #[arg(long, default_value = "default")]
        project: String,
        #[command(flatten)]
        secrets: SecretArgs,
        #[command(flatten)]
        common: Common,
    },
    /// Test a connector: initialize and tools/list.
    Test {
        id: String,
        #[arg(long, default_value = "default")]
        project: String,
        #[command(flatten)]
        common: Common,
    },
    /// Delete a connector.
    Rm {
        id: String,
        #[arg(long, default_value = "default")]
        project: String,
        #[command(flatten)]
        common: Common,
    },
}

#[derive(Subcommand)]
pub enum SecretsCommand {
    /// Seal every stored credential again under the current AGENTD_SECRET_KEY (old keys from
    /// AGENTD_SECRET_KEYS_OLD open them), in one transaction.
    Rotate {
        #[command(flatten)]
        common: Common,
    },
}

async fn engine(common: &Common) -> anyhow::Result<Engine> {
    let config = crate::common::load_config(common, None)?;
    Ok(agentd_server::cli_engine::engine_for_cli(&config).await?)
}

fn print(value: &impl serde::Serialize) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, value)?;
    writeln!(out)?;
    Ok(())
}

/// The operator acting on a project named by name or id.
async fn operator(engine: &Engine, project: &str) -> anyhow::Result<(Caller, String)> {
    let owner = Caller::cli(String::new());
    let id = match engine.project_for(&owner, Some(project)).await {
        Ok(id) => id,
        Err(_) => anyhow::bail!("no project named \"{project}\" (see `agentd projects list`)"),
    };
    Ok((Caller::cli(id.clone()), id))
}

fn env_secret(var: &str) -> anyhow::Result<SecretString> {
    match std::env::var(var) {
        Ok(value) if !value.is_empty() => Ok(SecretString::from(value)),
        _ => anyhow::bail!("the environment variable {var} is not set"),
    }
}

/// A bearer token and headers, as the CLI read them.
type Secrets = (Option<SecretString>, Option<BTreeMap<String, SecretString>>);

fn read_secrets(args: &SecretArgs) -> anyhow::Result<Secrets> {
    let authorization = if args.authorization_stdin {
        let mut text = String::new();
        std::io::stdin().read_to_string(&mut text)?;
        Some(SecretString::from(text.trim().to_owned()))
    } else {
        args.authorization_env
            .as_deref()
            .map(env_secret)
            .transpose()?
    };
    let mut headers = BTreeMap::new();
    for pair in &args.header_env {
        let Some((name, var)) = pair.split_once('=') else {
            anyhow::bail!("--header-env takes NAME=VAR (got \"{pair}\")");
        };
        headers.insert(name.to_owned(), env_secret(var)?);
    }
    Ok((authorization, (!headers.is_empty()).then_some(headers)))
}

pub async fn projects(command: ProjectsCommand) -> anyhow::Result<()> {
    match command {
        ProjectsCommand::List { common } => {
            let engine = engine(&common).await?;
            print(&engine.list_projects(&Caller::cli(String::new())).await?)
        }
        ProjectsCommand::Create { name, common } => {
            let engine = engine(&common).await?;
            print(
                &engine
                    .create_project(&Caller::cli(String::new()), &name)
                    .await?,
            )
        }
        ProjectsCommand::Rename {
            name,
            new_name,
            common,
        } => {
            let engine = engine(&common).await?;
            let (caller, id) = operator(&engine, &name).await?;
            print(&engine.rename_project(&caller, &id, &new_name).await?)
        }
        ProjectsCommand::Rm { name, common } => {
            let engine = engine(&common).await?;
            let (caller, id) = operator(&engine, &name).await?;
            engine.delete_project(&caller, &id).await?;
            writeln!(std::io::stderr(), "deleted project \"{name}\" ({id})")?;
            Ok(())
        }
    }
}

/// `agentd keys create` with a role: the key alone on the last line of stdout.
pub async fn create_key(
    common: &Common,
    project: &str,
    role: &str,
    name: Option<String>,
) -> anyhow::Result<()> {
    let engine = engine(common).await?;
    let project_id = engine.ensure_project(project).await?;
    let created = engine
        .create_api_key(
            &Caller::cli(project_id.clone()),
            &project_id,
            name,
            Some(role),
        )
        .await?;
    let key = created.key.unwrap_or_default();
    writeln!(std::io::stdout().lock(), "{key}")?;
    writeln!(
        std::io::stderr(),
        "created an API key ({}, role {role}) for project \"{project}\"; it is shown only once",
        created.id
    )?;
    Ok(())
}

pub async fn list_keys(common: &Common, project: &str) -> anyhow::Result<()> {
    let engine = engine(common).await?;
    let (caller, id) = operator(&engine, project).await?;
    print(&engine.list_api_keys(&caller, &id).await?)
}

pub async fn revoke_key(common: &Common, project: &str, key_id: &str) -> anyhow::Result<()> {
    let engine = engine(common).await?;
    let (caller, id) = operator(&engine, project).await?;
    engine.revoke_api_key(&caller, &id, key_id).await?;
    writeln!(std::io::stderr(), "revoked {key_id}")?;
    Ok(())
}

pub async fn connectors(command: ConnectorsCommand) -> anyhow::Result<()> {
    match command {
        ConnectorsCommand::Add {
            project,
            id,
            label,
            url,
            transport,
            description,
            allowed_tools,
            require_approval,
            eager,
            timeout,
            sandbox_env,
            oauth,
            secrets,
            common,
        } => {
            let engine = engine(&common).await?;
            let (caller, project_id) = operator(&engine, &project).await?;
            let (authorization, headers) = read_secrets(&secrets)?;
            let transport = ConnectorTransport::parse(&transport)
                .ok_or_else(|| anyhow::anyhow!("--transport is auto, streamable_http or sse"))?;
            let require_approval = match require_approval.as_deref() {
                None => None,
                Some("always") => Some(RequireApproval::Mode(ApprovalMode::Always)),
                Some("never") => Some(RequireApproval::Mode(ApprovalMode::Never)),
                Some(other) => anyhow::bail!("--require-approval is always or never (got {other})"),
            };
            let mut env = BTreeMap::new();
            for pair in sandbox_env {
                let Some((var, source)) = pair.split_once('=') else {
                    anyhow::bail!("--sandbox-env takes VAR=SOURCE (got \"{pair}\")");
                };
                env.insert(var.to_owned(), source.to_owned());
            }
            let body = ConnectorCreate {
                id,
                server_label: label,
                server_url: url,
                transport: Some(transport),
                authorization_type: oauth.then_some(AuthorizationType::Oauth),
                authorization,
                headers,
                description,
                allowed_tools: (!allowed_tools.is_empty()).then_some(allowed_tools),
                require_approval,
                defer_loading: Some(!eager),
                timeout_s: timeout,
                sandbox_env: (!env.is_empty()).then_some(env),
                enabled: Some(true),
            };
            print(&engine.create_connector(&caller, &project_id, body).await?)
        }
        ConnectorsCommand::List { project, common } => {
            let engine = engine(&common).await?;
            let (caller, id) = operator(&engine, &project).await?;
            print(&engine.list_connectors(&caller, &id).await?)
        }
        ConnectorsCommand::Show {
            id,
            project,
            common,
        } => {
            let engine = engine(&common).await?;
            let (caller, project_id) = operator(&engine, &project).await?;
            print(&engine.get_connector(&caller, &project_id, &id).await?)
        }
        ConnectorsCommand::Rotate {
            id,
            project,
            secrets,
            common,
        } => {
            let engine = engine(&common).await?;
            let (caller, project_id) = operator(&engine, &project).await?;
            let (authorization, headers) = read_secrets(&secrets)?;
            let body = ConnectorRotate {
                authorization,
                headers,
            };
            print(
                &engine
                    .rotate_connector(&caller, &project_id, &id, body)
                    .await?,
            )
        }
        ConnectorsCommand::Test {
            id,
            project,
            common,
        } => {
            let engine = engine(&common).await?;
            let (caller, project_id) = operator(&engine, &project).await?;
            let outcome = engine.test_connector(&caller, &project_id, &id).await?;
            print(&outcome)?;
            if !outcome.ok {
                anyhow::bail!("the test of {id} failed");
            }
            Ok(())
        }
        ConnectorsCommand::Rm {
            id,
            project,
            common,
        } => {
            let engine = engine(&common).await?;
            let (caller, project_id) = operator(&engine, &project).await?;
            engine.delete_connector(&caller, &project_id, &id).await?;
            writeln!(std::io::stderr(), "deleted {id}")?;
            Ok(())
        }
    }
}

pub async fn secrets(command: SecretsCommand) -> anyhow::Result<()> {
    match command {
        SecretsCommand::Rotate { common } => {
            let engine = engine(&common).await?;
            let count = engine.reseal_secrets().await?;
            writeln!(
                std::io::stdout().lock(),
                "sealed {count} stored values again under the current key"
            )?;
            Ok(())
        }
    }
}
