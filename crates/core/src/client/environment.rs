//! The client options a caller leaves unset, found where the Python SDK 0.38 finds them,
//! the same in every runtime: through the platform seam's environment, files and commands
//! (Node, Bun and Deno provide them; browsers and Workers provide none, so their callers
//! pass options).
//!
//! - the credential: `apiKey`, else `TINKER_API_KEY`, else `TINKER_CREDENTIAL_CMD` (run for
//!   every credential it supplies, `lib/_auth_token_provider.py`
//!   `CredentialCmdAuthProvider`), else the default key of `~/.tinker/credentials.json`
//!   (only without a command: `resolve_auth_provider`); a given key that is not a Tinker
//!   key falls back to the command when one is set;
//! - `baseURL` else `TINKER_BASE_URL`; `projectId` else `TINKER_PROJECT_ID`; `tags` else
//!   `TINKER_TAGS` (comma-separated, sorted and deduplicated as Python's `set`);
//! - `telemetry` else on unless `TINKER_TELEMETRY` is set to something other than
//!   1/true/yes/on (any case; `lib/telemetry.py`);
//! - `CLOUDFLARE_ACCESS_CLIENT_ID` / `_SECRET` as `CF-Access-Client-Id` / `-Secret`
//!   (`_base_client.py`), under the caller's `defaultHeaders` of the same name.
//!
//! The command, the credentials file, `TINKER_TELEMETRY` and the Cloudflare Access headers
//! are feature `environment` (on by default; off in the lite wasm build, whose size budget
//! they would pass: there only the four `TINKER_*` variables are read).

#[cfg(feature = "environment")]
use crate::json::{self, Value};
use crate::options::{ClientOptions, DEFAULT_BASE_URL};
use crate::platform::Host;

/// What the caller set of the options the environment can supply (`None`: unset).
#[derive(Debug, Clone, Default)]
pub struct Given {
    /// `apiKey`.
    pub api_key: Option<String>,
    /// `baseURL`.
    pub base_url: Option<String>,
    /// `projectId`.
    pub project_id: Option<String>,
    /// `tags`.
    pub tags: Option<Vec<String>>,
    /// `telemetry`.
    pub telemetry: Option<bool>,
    /// `defaultHeaders`.
    pub default_headers: Vec<(String, String)>,
}

/// A variable of `host`'s environment, an empty value counting as unset.
fn var(host: &dyn Host, name: &str) -> Option<String> {
    host.env_var(name).filter(|v| !v.is_empty())
}

/// Fills `opts` from `given` and, where it is unset, from the environment of `host`.
pub fn apply(given: Given, host: &dyn Host, opts: &mut ClientOptions) {
    let var = |name: &str| var(host, name);
    opts.api_key = given.api_key.or_else(|| var("TINKER_API_KEY"));
    opts.base_url = given
        .base_url
        .or_else(|| var("TINKER_BASE_URL"))
        .unwrap_or_else(|| DEFAULT_BASE_URL.to_string());
    opts.project_id = given.project_id.or_else(|| var("TINKER_PROJECT_ID"));
    opts.tags = given
        .tags
        .unwrap_or_else(|| var("TINKER_TAGS").map(|s| tags(&s)).unwrap_or_default());
    opts.telemetry = given.telemetry.unwrap_or(true);
    opts.default_headers = given.default_headers;
    #[cfg(feature = "environment")]
    from_host(host, given.telemetry.is_some(), opts);
}

/// The rest of the chain (feature `environment`, off in the lite wasm build for its size
/// budget): the credential command and the stored key, `TINKER_TELEMETRY`, the Cloudflare
/// Access headers.
#[cfg(feature = "environment")]
fn from_host(host: &dyn Host, telemetry_given: bool, opts: &mut ClientOptions) {
    let var = |name: &str| var(host, name);
    let cmd = var("TINKER_CREDENTIAL_CMD");
    opts.api_key = match (opts.api_key.take(), &cmd) {
        (Some(k), Some(_)) if !crate::options::is_tinker_key(&k) => None,
        (Some(k), _) => Some(k),
        (None, Some(_)) => None,
        (None, None) => stored_default_key(host),
    };
    opts.credential_cmd = cmd;
    if !telemetry_given {
        opts.telemetry = host.env_var("TINKER_TELEMETRY").is_none_or(|v| truthy(&v));
    }
    opts.default_headers = with_cloudflare_access(std::mem::take(&mut opts.default_headers), &var);
}

#[cfg(feature = "environment")]
/// `TINKER_TELEMETRY`'s "on" values (`lib/telemetry.py`).
fn truthy(v: &str) -> bool {
    ["1", "true", "yes", "on"]
        .iter()
        .any(|t| v.eq_ignore_ascii_case(t))
}

/// `TINKER_TAGS` as tags: split on commas, sorted, deduplicated (by insertion: a handful
/// of tags, and no sort code in the module for it).
fn tags(s: &str) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    for t in s.split(',') {
        if let Err(i) = v.binary_search_by(|x| x.as_str().cmp(t)) {
            v.insert(i, t.to_string());
        }
    }
    v
}

#[cfg(feature = "environment")]
/// The caller's headers with the Cloudflare Access ones from the environment before them,
/// unless the caller sets the same name (any case).
fn with_cloudflare_access(
    given: Vec<(String, String)>,
    var: &dyn Fn(&str) -> Option<String>,
) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (name, env) in [
        ("CF-Access-Client-Id", "CLOUDFLARE_ACCESS_CLIENT_ID"),
        ("CF-Access-Client-Secret", "CLOUDFLARE_ACCESS_CLIENT_SECRET"),
    ] {
        if given.iter().any(|(k, _)| k.eq_ignore_ascii_case(name)) {
            continue;
        }
        if let Some(v) = var(env) {
            out.push((name.to_string(), v));
        }
    }
    out.extend(given);
    out
}

#[cfg(feature = "environment")]
/// `~/.tinker/credentials.json` under `home` (what `tinker auth login` writes).
pub fn credentials_path(home: &str) -> String {
    format!("{}/.tinker/credentials.json", home.trim_end_matches('/'))
}

#[cfg(feature = "environment")]
/// The stored default key (`JsonCredentialStore.get_default_key`), or `None`; a file that
/// cannot be read or parsed counts as none (the missing key is then what the error names).
fn stored_default_key(host: &dyn Host) -> Option<String> {
    let home = var(host, "HOME")?;
    let text = host.read_text_file(&credentials_path(&home))?;
    default_key(&json::from_str(&text).ok()?)
}

#[cfg(feature = "environment")]
/// The default key of a parsed credentials file.
fn default_key(file: &Value) -> Option<String> {
    let id = file.get("default")?.as_str()?;
    let key = file.get("keys")?.get(id)?.get("key")?.as_str()?;
    Some(key.to_string())
}

#[cfg(all(test, feature = "environment"))]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// A host with these variables and files.
    #[derive(Default)]
    struct Fake {
        vars: HashMap<String, String>,
        files: HashMap<String, String>,
    }

    impl Host for Fake {
        fn env_var(&self, name: &str) -> Option<String> {
            self.vars.get(name).cloned()
        }
        fn read_text_file(&self, path: &str) -> Option<String> {
            self.files.get(path).cloned()
        }
    }

    fn host(vars: &[(&str, &str)], stored: Option<&str>) -> Fake {
        let mut h = Fake::default();
        h.vars.insert("HOME".into(), "/home/u".into());
        for (k, v) in vars {
            h.vars.insert(k.to_string(), v.to_string());
        }
        if let Some(key) = stored {
            let file = format!(
                r#"{{"version": 1, "default": "7", "keys": {{"7": {{"type": "manual", "key": "{key}", "name": "k"}}}}}}"#
            );
            h.files
                .insert("/home/u/.tinker/credentials.json".into(), file);
        }
        h
    }

    fn resolve(given: Given, h: &Fake) -> ClientOptions {
        let mut o = ClientOptions::default();
        apply(given, h, &mut o);
        o
    }

    fn key(k: &str) -> Given {
        Given {
            api_key: Some(k.into()),
            ..Given::default()
        }
    }

    #[test]
    fn the_credential_chain() {
        let cmd = ("TINKER_CREDENTIAL_CMD", "echo tml-cmd");
        let env = ("TINKER_API_KEY", "tml-env");
        // (given key, variables, stored key) -> (api key, whether the command is kept)
        type Case<'a> = (
            Option<&'a str>,
            &'a [(&'a str, &'a str)],
            Option<&'a str>,
            Option<&'a str>,
            bool,
        );
        let cases: &[Case] = &[
            (None, &[], None, None, false),
            (None, &[], Some("tml-stored"), Some("tml-stored"), false),
            (None, &[env], Some("tml-stored"), Some("tml-env"), false),
            (None, &[cmd], Some("tml-stored"), None, true),
            (None, &[env, cmd], None, Some("tml-env"), true),
            (
                Some("tml-given"),
                &[env, cmd],
                Some("tml-stored"),
                Some("tml-given"),
                true,
            ),
            (Some("eyJjwt"), &[cmd], None, Some("eyJjwt"), true),
            // A key that is not a Tinker key falls back to the command, else stays (and
            // the options' check names it).
            (Some("sk-other"), &[cmd], None, None, true),
            (
                Some("sk-other"),
                &[],
                Some("tml-stored"),
                Some("sk-other"),
                false,
            ),
            (
                None,
                &[("TINKER_API_KEY", "")],
                Some("tml-stored"),
                Some("tml-stored"),
                false,
            ),
        ];
        for (i, (given, vars, stored, want, has_cmd)) in cases.iter().enumerate() {
            let g = given.map(key).unwrap_or_default();
            let o = resolve(g, &host(vars, *stored));
            assert_eq!(o.api_key.as_deref(), *want, "case {i}");
            assert_eq!(o.credential_cmd.is_some(), *has_cmd, "case {i}");
        }
    }

    #[test]
    fn a_bad_credentials_file_is_no_key() {
        for text in [
            "",
            "{",
            "[]",
            r#"{"default": null, "keys": {}}"#,
            r#"{"default": "1", "keys": {}}"#,
            r#"{"default": 3, "keys": {"3": {"key": "tml-n"}}}"#,
        ] {
            let mut h = host(&[], None);
            h.files
                .insert("/home/u/.tinker/credentials.json".into(), text.into());
            assert_eq!(resolve(Given::default(), &h).api_key, None, "{text:?}");
        }
        let mut h = host(&[], None);
        h.files.insert(
            "/home/u/.tinker/credentials.json".into(),
            r#"{"default": "3", "keys": {"3": {"key": "tml-n"}}}"#.into(),
        );
        assert_eq!(
            resolve(Given::default(), &h).api_key.as_deref(),
            Some("tml-n")
        );
    }

    #[test]
    fn server_project_and_tags() {
        let h = host(
            &[
                ("TINKER_BASE_URL", "http://sim:1"),
                ("TINKER_PROJECT_ID", "p1"),
                ("TINKER_TAGS", "b,a,b"),
            ],
            None,
        );
        let o = resolve(Given::default(), &h);
        assert_eq!(
            (o.base_url.as_str(), o.project_id.as_deref(), o.tags.clone()),
            (
                "http://sim:1",
                Some("p1"),
                vec!["a".to_string(), "b".into()]
            )
        );
        let given = Given {
            base_url: Some("http://mine".into()),
            project_id: Some("p2".into()),
            tags: Some(vec![]),
            ..Given::default()
        };
        let o = resolve(given, &h);
        assert_eq!(
            (o.base_url.as_str(), o.project_id.as_deref(), o.tags.len()),
            ("http://mine", Some("p2"), 0)
        );
        assert_eq!(
            resolve(Given::default(), &host(&[], None)).base_url,
            DEFAULT_BASE_URL
        );
    }

    #[test]
    fn telemetry_from_the_environment() {
        let cases = [
            (None, true),
            (Some("0"), false),
            (Some("false"), false),
            (Some("off"), false),
            (Some(""), false),
            (Some("1"), true),
            (Some("TRUE"), true),
            (Some("Yes"), true),
            (Some("on"), true),
        ];
        for (v, on) in cases {
            let vars: Vec<(&str, &str)> = v.map(|v| ("TINKER_TELEMETRY", v)).into_iter().collect();
            assert_eq!(
                resolve(Given::default(), &host(&vars, None)).telemetry,
                on,
                "{v:?}"
            );
        }
        let given = Given {
            telemetry: Some(true),
            ..Given::default()
        };
        assert!(resolve(given, &host(&[("TINKER_TELEMETRY", "0")], None)).telemetry);
    }

    #[test]
    fn cloudflare_access_headers_under_the_callers() {
        let h = host(
            &[
                ("CLOUDFLARE_ACCESS_CLIENT_ID", "id"),
                ("CLOUDFLARE_ACCESS_CLIENT_SECRET", "secret"),
            ],
            None,
        );
        let pairs = |o: ClientOptions| -> Vec<(String, String)> { o.default_headers };
        let s = |a: &str, b: &str| (a.to_string(), b.to_string());
        assert_eq!(
            pairs(resolve(Given::default(), &h)),
            vec![
                s("CF-Access-Client-Id", "id"),
                s("CF-Access-Client-Secret", "secret")
            ]
        );
        let given = Given {
            default_headers: vec![s("cf-access-client-id", "mine")],
            ..Given::default()
        };
        assert_eq!(
            pairs(resolve(given, &h)),
            vec![
                s("CF-Access-Client-Secret", "secret"),
                s("cf-access-client-id", "mine")
            ]
        );
    }
}
