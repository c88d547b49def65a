//! [`HintConfig`]: what the runtime-state hints say and when (the reference's
//! `InjectionConfig`); the hints themselves are injected by the `hints` step of the loop.

use std::borrow::Cow;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, SystemTime};

use towerscope_core::Id;

use crate::clock::{Clock, Timezone};

/// The reference's hint template; `{runtime_state}` becomes the `<key>value</key>` lines.
pub const DEFAULT_HINT_TEMPLATE: &str = "<system-reminder>Treat the following as the ground truth at this point of the conversation. Anything stated earlier is outdated, and a later reminder, if any, supersedes this one:\n{runtime_state}\n</system-reminder>";

/// The reference's source of runtime-state hints (also how earlier ones are recognised).
pub const DEFAULT_HINT_SOURCE: &str = r#"{"label": "System", "sublabel": "Runtime State"}"#;

/// The reference's repeated-tool-error hint; `{tool_name}` and `{count}` are replaced.
pub const DEFAULT_TOOL_RETRIES_HINT: &str = "The last {count} calls to '{tool_name}' with the same arguments all failed. \
     Stop retrying the same call as-is, check the error message and try a different approach.";

/// The reference's task tools, whose calls in the context tell that the model knows its tasks.
pub const DEFAULT_TASK_TOOL_NAMES: &[Cow<'static, str>] = &[
    Cow::Borrowed("TaskCreate"),
    Cow::Borrowed("TaskGet"),
    Cow::Borrowed("TaskList"),
    Cow::Borrowed("TaskUpdate"),
];

/// What the runtime-state hints say and when (the reference's `InjectionConfig`).
///
/// # Example
///
/// ```
/// use std::time::Duration;
/// use towerscope_agent::{HintConfig, clock::Timezone};
///
/// let hints = HintConfig::new()
///     .timezone(Timezone::fixed("Asia/Shanghai", 8 * 60))
///     .time_interval(Duration::from_secs(3600))
///     .extra_field("user-plan", "pro");
/// assert!(hints.enabled);
/// assert!(!HintConfig::disabled().enabled);
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct HintConfig {
    /// Whether hints are injected (default `true`).
    pub enabled: bool,
    /// The timezone of the time written (default UTC).
    pub timezone: Timezone,
    /// How long after a recorded time a new one is injected (default 30 minutes).
    pub time_interval: Duration,
    /// The hint's text; must contain `{runtime_state}`. Borrowed for the default, so an agent
    /// with the default hints holds no copy of it.
    pub template: Cow<'static, str>,
    /// The hint block's source.
    pub source: Cow<'static, str>,
    /// Extra `<key>value</key>` lines added to every hint.
    pub extra_fields: Vec<(String, String)>,
    /// Whether a `HINT_BLOCK` event is emitted (default `true`).
    pub emit_event: bool,
    /// Where the time is read.
    pub clock: Clock,
    /// How many times in a row the same call (same tool, same arguments) must fail before the
    /// `tool-error` line is added (default 3, at least 3, as in the reference).
    pub tool_retries_limit: u32,
    /// The `tool-error` line; `{tool_name}` and `{count}` are replaced.
    pub tool_retries_hint: Cow<'static, str>,
    /// The tools whose calls in the context tell that the model knows its open tasks, so no
    /// `tasks` line is added (default: the four task tools of [`tasks`](crate::tasks)).
    pub task_tool_names: Cow<'static, [Cow<'static, str>]>,
}

impl Default for HintConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            timezone: Timezone::utc(),
            time_interval: Duration::from_secs(30 * 60),
            template: Cow::Borrowed(DEFAULT_HINT_TEMPLATE),
            source: Cow::Borrowed(DEFAULT_HINT_SOURCE),
            extra_fields: Vec::new(),
            emit_event: true,
            clock: Clock::system(),
            tool_retries_limit: 3,
            tool_retries_hint: Cow::Borrowed(DEFAULT_TOOL_RETRIES_HINT),
            task_tool_names: Cow::Borrowed(DEFAULT_TASK_TOOL_NAMES),
        }
    }
}

impl HintConfig {
    /// The reference's defaults: on, UTC, every 30 minutes.
    pub fn new() -> Self {
        Self::default()
    }

    /// No hints: the step does nothing.
    pub fn disabled() -> Self {
        Self {
            enabled: false,
            ..Self::default()
        }
    }

    /// Sets the timezone.
    #[must_use]
    pub fn timezone(mut self, timezone: Timezone) -> Self {
        self.timezone = timezone;
        self
    }

    /// Sets the interval after which the time is told again.
    #[must_use]
    pub fn time_interval(mut self, interval: Duration) -> Self {
        self.time_interval = interval;
        self
    }

    /// Sets the template (checked when the agent is built: it must contain `{runtime_state}`).
    #[must_use]
    pub fn template(mut self, template: impl Into<Cow<'static, str>>) -> Self {
        self.template = template.into();
        self
    }

    /// Adds a `<key>value</key>` line to every hint.
    #[must_use]
    pub fn extra_field(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.extra_fields.push((key.into(), value.into()));
        self
    }

    /// Sets whether a `HINT_BLOCK` event is emitted.
    #[must_use]
    pub fn emit_event(mut self, emit: bool) -> Self {
        self.emit_event = emit;
        self
    }

    /// Sets the clock (a [`Clock::fixed`] in tests).
    #[must_use]
    pub fn clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }

    /// Sets how many failures in a row of the same call bring the `tool-error` line (checked
    /// when the agent is built: at least 3).
    #[must_use]
    pub fn tool_retries_limit(mut self, limit: u32) -> Self {
        self.tool_retries_limit = limit;
        self
    }

    /// Sets the `tool-error` line (`{tool_name}` and `{count}` are replaced).
    #[must_use]
    pub fn tool_retries_hint(mut self, hint: impl Into<Cow<'static, str>>) -> Self {
        self.tool_retries_hint = hint.into();
        self
    }

    /// Sets the tools whose calls in the context stand for the model knowing its tasks.
    #[must_use]
    pub fn task_tool_names(mut self, names: impl IntoIterator<Item = impl Into<Cow<'static, str>>>) -> Self {
        self.task_tool_names = names.into_iter().map(Into::into).collect::<Vec<_>>().into();
        self
    }

    /// Checks the configuration; returns where the template's `{runtime_state}` starts and ends,
    /// in bytes (found once here, not at every hint).
    pub(crate) fn validate(&self) -> Result<Span, String> {
        if self.tool_retries_limit < 3 {
            return Err(format!(
                "tool_retries_limit must be at least 3, got {}.",
                self.tool_retries_limit
            ));
        }
        let span = crate::hints::placeholder_span(&self.template);
        if span.0 == span.1 {
            return Err(format!(
                "The injection template must contain the '{{runtime_state}}' placeholder, got {:?}.",
                self.template
            ));
        }
        Ok(span)
    }
}

/// Where a template's `{runtime_state}` starts and ends, in bytes.
pub(crate) type Span = (usize, usize);

/// A checked configuration, shared, with its template's [`Span`]; or why it is wrong.
pub(crate) type Checked = Result<(Arc<HintConfig>, Span), String>;

/// The hints of one agent: the configuration, and the time read from the newest hint that
/// recorded one (by the hint block's id: a hint's text never changes), so a round reads it
/// back without searching and parsing the text again.
#[derive(Debug)]
pub(crate) struct Hints {
    /// Shared: agents with the default hints hold one configuration between them.
    pub(crate) config: Arc<HintConfig>,
    pub(crate) recorded: Mutex<Option<(Id, SystemTime)>>,
    /// Where the template's `{runtime_state}` starts and ends, in bytes
    /// ([`HintConfig::validate`]'s answer).
    pub(crate) split: Span,
}

impl HintConfig {
    /// The default configuration, built (and checked) once per process and shared by every
    /// agent that keeps it: an idle agent holds a pointer, not a copy. With it, where its
    /// template's `{runtime_state}` is (see [`validate`](Self::validate)).
    pub(crate) fn shared_default() -> Checked {
        static DEFAULT: OnceLock<Checked> = OnceLock::new();
        DEFAULT
            .get_or_init(|| {
                let config = HintConfig::default();
                config.validate().map(|span| (Arc::new(config), span))
            })
            .clone()
    }
}

impl Hints {
    pub(crate) fn new(config: Arc<HintConfig>, split: Span) -> Self {
        Self {
            split,
            config,
            recorded: Mutex::new(None),
        }
    }
}
