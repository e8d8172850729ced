//! What Codex CLI's worker needs in the box: its variables, its key (its provider's variable,
//! or its login file), its model endpoint from its configuration, and its own `CODEX_HOME`.

use std::path::{Path, PathBuf};

use anyhow::Context as _;

use crate::sandbox::{relay_base, Endpoint, Login, Needs};

/// Codex's variables, each by its name.
const PASS: &[&str] = &[
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "OPENAI_ORGANIZATION",
    "OPENAI_PROJECT",
    "CODEX_API_KEY",
];

/// The variables that carry its key (a bearer token); a provider's `env_key` comes on top.
const KEYS: &[&str] = &["OPENAI_API_KEY", "CODEX_API_KEY"];

/// The secret fields of its login file, `auth.json`: a key, or a ChatGPT login's tokens (its
/// `id_token` only names the account, and Codex reads it itself).
const LOGIN_SECRETS: &[&str] = &[
    "/OPENAI_API_KEY",
    "/tokens/access_token",
    "/tokens/refresh_token",
];

/// Codex's needs for a box whose `CODEX_HOME` is the run's own `codex_home` (inside the
/// scratch: `run_home`), with the user's login file `login` when there is one. The endpoint is
/// the `model_provider`'s `base_url` in the run's `config.toml` (its `env_key` is kept out of
/// the box like the key), else `OPENAI_BASE_URL`, else https://api.openai.com/v1. A remote
/// one is reached through the relay's loopback port: `OPENAI_BASE_URL`, or the provider's
/// `base_url` in the run's copy of the configuration, is pointed there.
pub fn box_needs(codex_home: &Path, login: Option<PathBuf>) -> anyhow::Result<Needs> {
    let cfg = codex_home.join("config.toml");
    let text = match std::fs::read_to_string(&cfg) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", cfg.display())),
    };
    let mut doc: toml_edit::DocumentMut = text
        .parse()
        .with_context(|| format!("{} is not valid TOML", cfg.display()))?;
    let provider = doc
        .get("model_provider")
        .and_then(|v| v.as_str())
        .map(str::to_owned);
    let mut extra = Vec::new();
    let url = match provider.as_deref() {
        None | Some("openai") => std::env::var("OPENAI_BASE_URL")
            .ok()
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "https://api.openai.com/v1".into()),
        Some(p) => {
            let table = doc.get("model_providers").and_then(|t| t.get(p));
            if let Some(k) = table
                .and_then(|t| t.get("env_key"))
                .and_then(|v| v.as_str())
            {
                extra.push(k.to_owned());
            }
            table
                .and_then(|t| t.get("base_url"))
                .and_then(|v| v.as_str())
                .map(str::to_owned)
                .with_context(|| {
                    format!(
                        "{}: cannot tell the model endpoint of model_provider `{p}` (no `[model_providers.{p}] base_url`)\n(hint: give the provider a base_url, or pass --no-contain to run without the box)",
                        cfg.display()
                    )
                })?
        }
    };
    let (endpoint, path) = Endpoint::parse(&url)?;
    let mut set: Vec<(std::ffi::OsString, std::ffi::OsString)> =
        vec![("CODEX_HOME".into(), codex_home.as_os_str().to_owned())];
    if let Endpoint::Remote { .. } = endpoint {
        let base = relay_base(&path);
        match provider.as_deref() {
            None | Some("openai") => set.push(("OPENAI_BASE_URL".into(), base.into())),
            Some(p) => {
                // The run's own copy of the configuration (never the user's file).
                doc["model_providers"][p]["base_url"] = toml_edit::value(base);
                crate::state::write_atomic_as(
                    &cfg,
                    doc.to_string().as_bytes(),
                    crate::state::Durability::Volatile,
                )?;
            }
        }
    }
    // Codex writes its home (sessions, logs, its app-server state) and fails on a read-only
    // one: the run's own is in the writable scratch, and the login file's copy goes in it.
    let logins = login
        .map(|from| Login {
            from,
            inside: codex_home.join("auth.json"),
            secrets: LOGIN_SECRETS,
        })
        .into_iter()
        .collect();
    let advice = advice(provider.as_deref(), extra.first().map(String::as_str));
    Ok(Needs {
        pass: PASS.to_vec(),
        keys: KEYS.iter().map(|k| (*k).to_owned()).collect(),
        extra,
        set,
        logins,
        endpoint,
        advice,
    })
}

/// [`advice`] for the configuration in `codex_home` (none, or one unreadable: the defaults').
pub fn advice_for_home(codex_home: &Path) -> crate::sandbox::Advice {
    let doc: Option<toml_edit::DocumentMut> =
        std::fs::read_to_string(codex_home.join("config.toml"))
            .ok()
            .and_then(|t| t.parse().ok());
    let provider = doc
        .as_ref()
        .and_then(|d| d.get("model_provider"))
        .and_then(|v| v.as_str());
    let env_key = provider.and_then(|p| {
        doc.as_ref()?
            .get("model_providers")?
            .get(p)?
            .get("env_key")?
            .as_str()
    });
    advice(provider, env_key)
}

/// What to do when Codex's endpoint refuses it: its provider's `env_key`, else its own key
/// variables or its login.
pub fn advice(provider: Option<&str>, env_key: Option<&str>) -> crate::sandbox::Advice {
    let credentials = match (provider, env_key) {
        (Some(p), Some(k)) if p != "openai" => {
            format!("set {k} (the env_key of model provider `{p}`) to a valid key")
        }
        _ => "set OPENAI_API_KEY (or CODEX_API_KEY) to a valid key, or run `codex login`".into(),
    };
    crate::sandbox::Advice {
        credentials,
        model: "check the model name (--model, `model` in config.toml) against what the endpoint serves, and its base_url".into(),
        endpoint: match provider {
            Some(p) if p != "openai" => format!("check the base_url of model provider `{p}` in config.toml, and the network"),
            _ => "check OPENAI_BASE_URL (default: api.openai.com) and the network".into(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a Codex home holding this `config.toml` needs of the box: the home, its config
    /// file, and the needs.
    fn needs_of(config: &str) -> (tempfile::TempDir, PathBuf, Needs) {
        let (home, cfg) = leopold_tests::temp_file("config.toml", config);
        let needs = box_needs(home.path(), None).unwrap();
        (home, cfg, needs)
    }

    #[test]
    fn codex_endpoint_comes_from_the_provider_and_passes_its_key() {
        let (_home, _, me) = needs_of(
            "model_provider = \"mock\"\n[model_providers.mock]\nbase_url = \"http://127.0.0.1:5555/v1\"\nenv_key = \"MOCK_API_KEY\"\n",
        );
        assert_eq!(
            me.endpoint,
            Endpoint::Loopback("127.0.0.1:5555".parse().unwrap())
        );
        assert_eq!(me.extra, ["MOCK_API_KEY"]);
    }

    #[test]
    fn a_remote_provider_is_pointed_at_the_relay_in_the_runs_copy() {
        let (_home, cfg, n) = needs_of(
            "# mine\nmodel_provider = \"corp\"\n[model_providers.corp]\nbase_url = \"https://llm.corp.example/openai/v1/\"\nenv_key = \"CORP_KEY\"\n",
        );
        assert_eq!(
            n.endpoint,
            Endpoint::Remote {
                host: "llm.corp.example".into(),
                port: 443
            }
        );
        let text = std::fs::read_to_string(&cfg).unwrap();
        assert!(text.starts_with("# mine\n"), "{text}");
        assert!(
            text.contains("base_url = \"http://127.0.0.1:3128/openai/v1\""),
            "{text}"
        );
        // The built-in provider: the variable, not the file (its default endpoint is remote).
        if std::env::var_os("OPENAI_BASE_URL").is_some() {
            return;
        }
        let plain = tempfile::tempdir().unwrap();
        let n = box_needs(plain.path(), None).unwrap();
        assert!(n
            .set
            .iter()
            .any(|(k, v)| k == "OPENAI_BASE_URL" && v == "http://127.0.0.1:3128/v1"));
    }
}
