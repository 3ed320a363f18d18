//! How each agent `wrap` knows reads its provider's address, and what pointing it at the proxy
//! takes: environment variables, a flag before its arguments, or a configuration passed in the
//! environment — never an edit of the user's files.
//!
//! Each way was read from the agents' own releases (pinned in `tests/clients/run.sh`, which
//! runs them through `wrap`): Claude Code 2.1.328 and Gemini CLI 0.61.0 read a base URL
//! variable (Gemini CLI with API-key sign-in selected in its settings: with none selected, the
//! variable makes it choose a gateway sign-in its `-p` mode refuses, and it reads system
//! settings files only from folders root owns, so `wrap` cannot select one for it); Codex
//! 0.169.0 ignores `OPENAI_BASE_URL` and reads the config key `openai_base_url`; opencode
//! 1.18.33 merges the JSON of `OPENCODE_CONFIG_CONTENT` over its configuration files, whose
//! `provider.<id>.options.baseURL` its providers' SDKs take; Qwen Code 0.24.4 reads
//! `OPENAI_BASE_URL` and `ANTHROPIC_BASE_URL`; aider 0.86.2 (through litellm) reads
//! `OPENAI_BASE_URL` then `OPENAI_API_BASE`, and `ANTHROPIC_API_BASE` then
//! `ANTHROPIC_BASE_URL`.

use std::ffi::OsStr;
use std::path::Path;

use anyhow::{Context, Result, bail};
use ctxcompact::proxy::Provider;
use serde_json::{Value, json};

/// One way an agent reads an address.
#[derive(Debug)]
enum Way {
    /// Environment variables holding a base URL, set to the proxy's address followed by
    /// `path`. The first of `vars` (in the order the agent reads them) the user has set is
    /// where the agent's requests went, so it becomes the provider's upstream.
    Env {
        provider: Provider,
        vars: &'static [&'static str],
        path: &'static str,
    },
    /// Codex's config key `openai_base_url`, given with `-c` before its arguments.
    CodexKey,
    /// opencode's `OPENCODE_CONFIG_CONTENT`: each provider's `options.baseURL`.
    OpencodeConfig,
}

/// An agent `wrap` knows, by its program's name.
#[derive(Debug)]
pub(crate) struct Preset {
    /// The program's name.
    pub(crate) program: &'static str,
    /// The agent's name in prose.
    pub(crate) agent: &'static str,
    ways: &'static [Way],
}

/// The agents `wrap` knows.
pub(crate) const PRESETS: [Preset; 6] = [
    Preset {
        program: "claude",
        agent: "Claude Code",
        ways: &[Way::Env {
            provider: Provider::Anthropic,
            vars: &["ANTHROPIC_BASE_URL"],
            path: "",
        }],
    },
    Preset {
        program: "codex",
        agent: "Codex",
        ways: &[Way::CodexKey],
    },
    Preset {
        program: "gemini",
        agent: "Gemini CLI",
        ways: &[Way::Env {
            provider: Provider::Gemini,
            vars: &["GOOGLE_GEMINI_BASE_URL"],
            path: "",
        }],
    },
    Preset {
        program: "opencode",
        agent: "opencode",
        ways: &[Way::OpencodeConfig],
    },
    Preset {
        program: "qwen",
        agent: "Qwen Code",
        ways: &[
            Way::Env {
                provider: Provider::OpenAi,
                vars: &["OPENAI_BASE_URL"],
                path: "/v1",
            },
            Way::Env {
                provider: Provider::Anthropic,
                vars: &["ANTHROPIC_BASE_URL"],
                path: "",
            },
        ],
    },
    Preset {
        program: "aider",
        agent: "aider",
        ways: &[
            Way::Env {
                provider: Provider::OpenAi,
                vars: &["OPENAI_BASE_URL", "OPENAI_API_BASE"],
                path: "/v1",
            },
            Way::Env {
                provider: Provider::Anthropic,
                vars: &["ANTHROPIC_API_BASE", "ANTHROPIC_BASE_URL"],
                path: "",
            },
        ],
    },
];

/// opencode's providers and the path their SDKs' base URLs end with.
const OPENCODE_PROVIDERS: [(&str, &str); 3] = [
    ("anthropic", "/v1"),
    ("openai", "/v1"),
    ("google", "/v1beta"),
];

/// What pointing an agent at the proxy takes, read from its environment before the proxy
/// listens: the upstreams it had, and what to set once the proxy's address is known.
#[derive(Debug, Default)]
pub(crate) struct Pointing {
    /// Upstreams read from where the agent was pointed before.
    pub(crate) upstreams: Vec<(Provider, String)>,
    settings: Vec<Setting>,
}

/// One thing to set, the proxy's address still to come.
#[derive(Debug, PartialEq)]
enum Setting {
    /// An environment variable: the address followed by `path`.
    Env { name: String, path: String },
    /// Codex's `-c openai_base_url=…`.
    CodexKey,
    /// `OPENCODE_CONFIG_CONTENT`: the user's configuration given there, if any, with each
    /// provider's base URL.
    OpencodeConfig(Value),
}

/// What to give the agent for the proxy at an address.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct AgentSetup {
    /// Environment variables to set.
    pub(crate) env: Vec<(String, String)>,
    /// Arguments to put before the agent's own.
    pub(crate) args: Vec<String>,
    /// What was set, for the line `wrap` prints.
    pub(crate) said: Vec<String>,
}

/// The name of opencode's inline configuration variable.
const OPENCODE_CONFIG_CONTENT: &str = "OPENCODE_CONFIG_CONTENT";

/// The preset of a program: by its file's name, also with a version after a `-` or `@`
/// (`/usr/local/bin/claude`, `claude-2.1`).
pub(crate) fn preset(program: &OsStr) -> Option<&'static Preset> {
    let name = Path::new(program).file_name()?.to_str()?;
    PRESETS.iter().find(|preset| {
        name.strip_prefix(preset.program).is_some_and(|rest| {
            rest.is_empty()
                || rest
                    .strip_prefix(['-', '@'])
                    .is_some_and(|version| version.starts_with(|c: char| c.is_ascii_digit()))
        })
    })
}

impl Pointing {
    /// How `preset` is pointed, with the environment read through `var`.
    ///
    /// # Errors
    /// An `OPENCODE_CONFIG_CONTENT` already set that is not a JSON object.
    pub(crate) fn of(preset: &Preset, var: &dyn Fn(&str) -> Option<String>) -> Result<Self> {
        let mut pointing = Self::default();
        for way in preset.ways {
            match way {
                Way::Env {
                    provider,
                    vars,
                    path,
                } => pointing.env(&[*provider], vars, path, var),
                Way::CodexKey => pointing.settings.push(Setting::CodexKey),
                Way::OpencodeConfig => {
                    let config = match var(OPENCODE_CONFIG_CONTENT) {
                        Some(text) => serde_json::from_str(&text)
                            .ok()
                            .filter(Value::is_object)
                            .with_context(|| {
                                format!(
                                    "{OPENCODE_CONFIG_CONTENT} is set, and is not a JSON object"
                                )
                            })?,
                        None => json!({}),
                    };
                    pointing.settings.push(Setting::OpencodeConfig(config));
                }
            }
        }
        Ok(pointing)
    }

    /// The pointing `--env VAR[=PATH]` asks for: `VAR` set to the proxy's address followed by
    /// `PATH`; the value the user had set is the upstream of every provider.
    ///
    /// # Errors
    /// A variable name that is empty or holds a NUL.
    pub(crate) fn named(named: &str, var: &dyn Fn(&str) -> Option<String>) -> Result<Self> {
        let (name, path) = named.split_once('=').unwrap_or((named, ""));
        if name.is_empty() || name.contains('\0') {
            bail!("--env {named}: expected VAR or VAR=PATH");
        }
        let mut pointing = Self::default();
        let every = [Provider::Anthropic, Provider::OpenAi, Provider::Gemini];
        pointing.env(&every, &[name], path, var);
        Ok(pointing)
    }

    /// Sets `vars` to the address followed by `path`; the first one the user had set names
    /// the upstream of `providers` (less `path`, when it ends with it, since the agent's
    /// requests carry it).
    fn env(
        &mut self,
        providers: &[Provider],
        vars: &[&str],
        path: &str,
        var: &dyn Fn(&str) -> Option<String>,
    ) {
        let was = vars
            .iter()
            .find_map(|&name| var(name).filter(|value| !value.is_empty()));
        let path = match &was {
            Some(url) => {
                let url = url.trim_end_matches('/');
                let (upstream, path) = match url.strip_suffix(path).filter(|_| !path.is_empty()) {
                    Some(origin) => (origin, path),
                    // An address without the path: the agent's requests go to it as they are.
                    None => (url, ""),
                };
                for &provider in providers {
                    self.upstreams.push((provider, upstream.to_string()));
                }
                path
            }
            None => path,
        };
        for &name in vars {
            self.settings.push(Setting::Env {
                name: name.into(),
                path: path.into(),
            });
        }
    }

    /// What to give the agent for the proxy at `origin` (`http://127.0.0.1:PORT`).
    pub(crate) fn at(&self, origin: &str) -> AgentSetup {
        let mut setup = AgentSetup::default();
        for setting in &self.settings {
            match setting {
                Setting::Env { name, path } => {
                    setup.env.push((name.clone(), format!("{origin}{path}")));
                    setup.said.push(name.clone());
                }
                Setting::CodexKey => {
                    let key = format!("openai_base_url=\"{origin}/v1\"");
                    setup.said.push(format!("-c {key}"));
                    setup.args.extend(["-c".to_string(), key]);
                }
                Setting::OpencodeConfig(config) => {
                    let mut config = config.clone();
                    for (id, path) in OPENCODE_PROVIDERS {
                        config["provider"][id]["options"]["baseURL"] =
                            json!(format!("{origin}{path}"));
                    }
                    setup.said.push(format!(
                        "{OPENCODE_CONFIG_CONTENT} (provider.{{anthropic,openai,google}}.options.baseURL)"
                    ));
                    setup
                        .env
                        .push((OPENCODE_CONFIG_CONTENT.into(), config.to_string()));
                }
            }
        }
        setup
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unset(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn a_program_is_known_by_its_file_name_with_or_without_a_version() {
        let named = |p: &str| preset(OsStr::new(p)).map(|preset| preset.agent);
        assert_eq!(named("claude"), Some("Claude Code"));
        assert_eq!(named("/usr/local/bin/claude"), Some("Claude Code"));
        assert_eq!(named("claude-2.1"), Some("Claude Code"));
        assert_eq!(named("codex@0.169.0"), Some("Codex"));
        assert_eq!(named("qwen"), Some("Qwen Code"));
        assert_eq!(named("claudette"), None);
        assert_eq!(named("gemini-cli"), None);
        assert_eq!(named("bash"), None);
    }

    /// The preset of `program` pointed at port 4000.
    fn setup(program: &str, var: &dyn Fn(&str) -> Option<String>) -> (Pointing, AgentSetup) {
        let pointing = Pointing::of(preset(OsStr::new(program)).unwrap(), var).unwrap();
        let setup = pointing.at("http://127.0.0.1:4000");
        (pointing, setup)
    }

    #[test]
    fn each_agent_is_pointed_the_way_it_reads() {
        let (_, codex) = setup("codex", &unset);
        assert_eq!(
            codex.args,
            ["-c", "openai_base_url=\"http://127.0.0.1:4000/v1\""]
        );
        assert!(codex.env.is_empty());
        let (_, opencode) = setup("opencode", &unset);
        let (name, config) = &opencode.env[0];
        assert_eq!(name, "OPENCODE_CONFIG_CONTENT");
        let config: Value = serde_json::from_str(config).unwrap();
        assert_eq!(
            config["provider"]["google"]["options"]["baseURL"],
            "http://127.0.0.1:4000/v1beta"
        );
        let (pointing, aider) = setup("aider", &unset);
        for (name, value) in [
            ("OPENAI_BASE_URL", "http://127.0.0.1:4000/v1"),
            ("OPENAI_API_BASE", "http://127.0.0.1:4000/v1"),
            ("ANTHROPIC_API_BASE", "http://127.0.0.1:4000"),
        ] {
            assert!(aider.env.contains(&(name.into(), value.into())), "{name}");
        }
        assert!(pointing.upstreams.is_empty());
    }

    #[test]
    fn an_address_the_user_had_set_becomes_the_upstream() {
        let set = |name: &str| {
            (name == "OPENAI_BASE_URL").then(|| "https://openrouter.ai/api/v1/".to_string())
        };
        let (qwen, qwen_setup) = setup("qwen", &set);
        assert_eq!(
            qwen.upstreams,
            [(Provider::OpenAi, "https://openrouter.ai/api".to_string())]
        );
        assert!(
            qwen_setup
                .env
                .contains(&("OPENAI_BASE_URL".into(), "http://127.0.0.1:4000/v1".into()))
        );
        // Without the path the agent adds, the requests go to it as they are.
        let bare = |_: &str| Some("https://gateway.example".to_string());
        let named = Pointing::named("MY_AGENT_URL=/v1", &bare).unwrap();
        assert_eq!(
            named.at("http://127.0.0.1:4000").env,
            [(
                "MY_AGENT_URL".to_string(),
                "http://127.0.0.1:4000".to_string()
            )]
        );
        assert_eq!(named.upstreams.len(), 3);
        let fresh = Pointing::named("MY_AGENT_URL=/v1", &unset).unwrap();
        assert_eq!(fresh.at("http://h").env[0].1, "http://h/v1");
        assert!(Pointing::named("=x", &unset).is_err());
        let broken = |_: &str| Some("not json".to_string());
        assert!(Pointing::of(preset(OsStr::new("opencode")).unwrap(), &broken).is_err());
    }
}
