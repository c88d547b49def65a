//! [`CassetteError`]: a request a cassette cannot answer, with what differs from the closest
//! recorded one, part by part.

use std::fmt;
use std::path::PathBuf;

use super::key::RequestKey;
use super::mode::CassetteMode;

/// A request a cassette in replay mode could not answer; nothing was sent.
///
/// Its `Display` names the cassette and, for the closest recorded request, each part that
/// differs as `- recorded` and `+ request` lines:
///
/// ```text
/// cassette tests/cassettes/weather.jsonl (replay) holds no request like this one, and nothing was sent.
/// The closest is interaction 1 (POST /v1/chat/completions); it differs in:
///   messages[1]:
///     - user: What is the weather in Paris?
///     + user: What is the weather in Rome?
/// Record it again with TOWERSCOPE_CASSETTE=record (or record-missing to keep the rest).
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CassetteError {
    /// The cassette file.
    pub cassette: PathBuf,
    /// Its mode.
    pub mode: CassetteMode,
    /// What went wrong, in full.
    pub message: String,
    /// The parts of the request that differ from the closest recorded one (`model`,
    /// `messages[1]`, `tools` for the names, `tools[0]` for one tool's definition, or a body
    /// field such as `temperature` or `tool_choice`); empty when nothing was recorded or the
    /// request matches one already replayed.
    pub differences: Vec<String>,
}

impl fmt::Display for CassetteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for CassetteError {}

/// The error for `request`, which matched none of the unplayed `recorded`
/// (`(number, key, played)`).
pub(crate) fn no_match(
    cassette: PathBuf,
    mode: CassetteMode,
    request: &RequestKey,
    recorded: &[(u32, &RequestKey, bool)],
) -> CassetteError {
    let head = format!(
        "cassette {} ({mode}) holds no request like this one, and nothing was sent.",
        cassette.display()
    );
    let advice = "Record it again with TOWERSCOPE_CASSETTE=record (or record-missing to keep the rest).";
    let again = recorded.iter().find(|(_, key, played)| *played && *key == request);
    if let Some((n, ..)) = again {
        return CassetteError {
            message: format!(
                "{head}\nIt is the request of interaction {n}, which was replayed already: the recording made it once \
                 (a repeated request, such as a retry, is recorded once per time it is sent).\n{advice}"
            ),
            cassette,
            mode,
            differences: Vec::new(),
        };
    }
    let unplayed = recorded.iter().filter(|(.., played)| !played);
    let closest = unplayed.max_by_key(|(n, key, _)| (likeness(key, request), std::cmp::Reverse(*n)));
    let Some((n, closest, _)) = closest else {
        let what = if recorded.is_empty() {
            "It holds no interactions."
        } else {
            "Every interaction it holds was replayed already."
        };
        return CassetteError {
            message: format!("{head}\n{what} The request: {}\n{advice}", summary(request)),
            cassette,
            mode,
            differences: Vec::new(),
        };
    };
    let changes = differences(closest, request);
    let mut message = format!(
        "{head}\nThe closest is interaction {n} ({} {}); it differs in:\n",
        closest.method, closest.path
    );
    for (part, recorded, sent) in &changes {
        message.push_str(&format!("  {part}:\n"));
        for line in recorded {
            message.push_str(&format!("    - {line}\n"));
        }
        for line in sent {
            message.push_str(&format!("    + {line}\n"));
        }
    }
    message.push_str(advice);
    CassetteError {
        cassette,
        mode,
        message,
        differences: changes.into_iter().map(|(part, ..)| part).collect(),
    }
}

/// How alike two requests are: the same endpoint and model first, then how many leading
/// messages agree, then how many messages there are in common.
fn likeness(a: &RequestKey, b: &RequestKey) -> (bool, bool, usize, bool) {
    let same_place = a.method == b.method && a.path == b.path;
    let leading = a.messages.iter().zip(&b.messages).take_while(|(x, y)| x == y).count();
    (
        same_place,
        a.model == b.model,
        leading,
        a.messages.len() == b.messages.len(),
    )
}

/// `(part, recorded lines, request lines)` for each part that differs.
fn differences(recorded: &RequestKey, request: &RequestKey) -> Vec<(String, Vec<String>, Vec<String>)> {
    let mut out = Vec::new();
    let mut simple = |part: &str, a: String, b: String| {
        if a != b {
            out.push((part.to_owned(), vec![a], vec![b]));
        }
    };
    simple("method", recorded.method.clone(), request.method.clone());
    simple("path", recorded.path.clone(), request.path.clone());
    let model = |m: &Option<String>| m.clone().unwrap_or_else(|| "(none)".to_owned());
    simple("model", model(&recorded.model), model(&request.model));
    simple("tools", recorded.tools.join(", "), request.tools.join(", "));
    if recorded.tools == request.tools {
        // The same names: say which tool's definition (description, schema) changed.
        for (i, (a, b)) in recorded
            .tool_definitions
            .iter()
            .zip(&request.tool_definitions)
            .enumerate()
        {
            simple(&format!("tools[{i}]"), a.clone(), b.clone());
        }
    }
    let option = |options: &[(String, String)], name: &str| {
        options
            .iter()
            .find(|(n, _)| n == name)
            .map_or_else(|| "(none)".to_owned(), |(_, value)| value.clone())
    };
    let mut names: Vec<&str> = recorded
        .options
        .iter()
        .chain(&request.options)
        .map(|(name, _)| name.as_str())
        .collect();
    names.sort_unstable();
    names.dedup();
    for name in names {
        simple(name, option(&recorded.options, name), option(&request.options, name));
    }
    let count = recorded.messages.len().max(request.messages.len());
    for i in 0..count {
        let (a, b) = (recorded.messages.get(i), request.messages.get(i));
        if a == b {
            continue;
        }
        let lines = |m: Option<&super::key::MessageKey>| m.map(|m| vec![m.describe()]).unwrap_or_default();
        out.push((format!("messages[{i}]"), lines(a), lines(b)));
    }
    out
}

/// `POST /path, model m, n messages, the last: ...`.
fn summary(key: &RequestKey) -> String {
    let last = key.messages.last().map(|m| m.describe()).unwrap_or_default();
    format!(
        "{} {}, model {}, {} messages, the last: {last}",
        key.method,
        key.path,
        key.model.as_deref().unwrap_or("(none)"),
        key.messages.len()
    )
}

#[cfg(test)]
mod tests {
    use super::super::key::MessageKey;
    use super::*;

    fn key(texts: &[&str]) -> RequestKey {
        RequestKey {
            method: "POST".into(),
            path: "/v1/chat/completions".into(),
            model: Some("m".into()),
            messages: texts
                .iter()
                .map(|t| MessageKey {
                    role: "user".into(),
                    parts: vec![(*t).to_owned()],
                })
                .collect(),
            tools: vec!["get_weather".into()],
            tool_definitions: vec![r#"{"name":"get_weather"}"#.into()],
            options: vec![("stream".into(), "true".into())],
        }
    }

    #[test]
    fn the_closest_recording_and_each_differing_part() {
        let (one, two) = (key(&["Hello"]), key(&["Weather in Paris?", "and Rome?"]));
        let request = key(&["Weather in Paris?", "and Lyon?"]);
        let err = no_match(
            "c.jsonl".into(),
            CassetteMode::Replay,
            &request,
            &[(1, &one, false), (2, &two, false)],
        );
        assert_eq!(err.differences, ["messages[1]"]);
        assert!(
            err.message.contains(
                "The closest is interaction 2 (POST /v1/chat/completions); it differs in:\n  messages[1]:\n    - user: and \
                 Rome?\n    + user: and Lyon?\n"
            ),
            "{}",
            err.message
        );
        assert!(
            err.message
                .starts_with("cassette c.jsonl (replay) holds no request like this one")
        );

        let replayed = no_match(
            "c.jsonl".into(),
            CassetteMode::Replay,
            &one,
            &[(1, &one, true), (2, &two, false)],
        );
        assert!(
            replayed.message.contains("interaction 1, which was replayed already"),
            "{}",
            replayed.message
        );
        let mut cooler = two.clone();
        cooler.options.push(("temperature".into(), "0.2".into()));
        cooler.tool_definitions[0] = r#"{"name":"get_weather","parameters":{}}"#.into();
        let err = no_match(
            "c.jsonl".into(),
            CassetteMode::Replay,
            &cooler,
            &[(1, &one, false), (2, &two, false)],
        );
        assert_eq!(err.differences, ["tools[0]", "temperature"]);
        assert!(
            err.message.contains(
                "  tools[0]:\n    - {\"name\":\"get_weather\"}\n    + {\"name\":\"get_weather\",\"parameters\":{}}\n  \
                 temperature:\n    - (none)\n    + 0.2\n"
            ),
            "{}",
            err.message
        );

        let empty = no_match("c.jsonl".into(), CassetteMode::Replay, &one, &[]);
        assert!(empty.message.contains("It holds no interactions."), "{}", empty.message);
    }
}
