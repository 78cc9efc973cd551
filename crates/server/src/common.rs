//! What every command shares: where the store and the config file are ([`Common`]), and the
//! configuration they resolve to ([`load_config`]).

use std::path::PathBuf;

use agentd_server::config::{Config, Flags, RawConfig};

#[derive(clap::Args, Clone)]
pub(crate) struct Common {
    /// Data directory for the embedded SQLite store [env: AGENTD_DATA_DIR] [default: ./agentd-data]
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// Store URL (sqlite://… or postgres://…) overriding the data directory [env: AGENTD_DATABASE_URL]
    #[arg(long)]
    database_url: Option<String>,
    /// Optional TOML config file [env: AGENTD_CONFIG]
    #[arg(long)]
    config: Option<PathBuf>,
}

/// The configuration from the config file, the environment and the flags.
pub(crate) fn load_config(common: &Common, listen: Option<String>) -> anyhow::Result<Config> {
    let env = |name: &str| std::env::var(name).ok();
    let path = common.config.clone().or_else(|| {
        env("AGENTD_CONFIG")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    });
    let file = match path {
        Some(path) => RawConfig::read(&path)?,
        None => RawConfig::default(),
    };
    let flags = Flags {
        listen,
        data_dir: common.data_dir.clone(),
        database_url: common.database_url.clone(),
    };
    Ok(Config::resolve(file, &env, &flags)?)
}
