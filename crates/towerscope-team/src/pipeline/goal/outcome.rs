//! What a goal run found: [`GoalOutcome`] and its [`Verdict`], and the bounds of a run
//! ([`GoalLimits`]).

/// The verifier's judgement of one round.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The goal is achieved: the run ends.
    Pass,
    /// Not yet: the executor gets the verifier's message and tries again, within
    /// [`GoalPipeline::max_iters`](super::GoalPipeline::max_iters) rounds.
    Fail,
    /// The goal cannot be achieved: the run ends.
    Impossible,
}

impl Verdict {
    /// The reference's word for it (`pass`, `fail`, `impossible`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pass => "pass",
            Self::Fail => "fail",
            Self::Impossible => "impossible",
        }
    }

    pub(super) fn parse(s: &str) -> Option<Self> {
        match s {
            "pass" => Some(Self::Pass),
            "fail" => Some(Self::Fail),
            "impossible" => Some(Self::Impossible),
            _ => None,
        }
    }
}

/// The last verification of a run.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct GoalOutcome {
    /// The verifier's verdict.
    pub verdict: Verdict,
    /// Its message: why the work failed and what to fix (may be empty on a pass).
    pub message: String,
    /// The executor's report the verifier judged.
    pub report: String,
    /// How many rounds (executor work, then verification) the run took.
    pub rounds: u32,
}

/// The bounds of a run, as the reference's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct GoalLimits {
    /// Rounds the verifier may fail before the run ends (reference `max_iters`, default 10).
    pub(super) max_iters: u32,
    /// Replies without a valid structured output each participant may retry over a run
    /// (reference `max_retries`, default 3).
    pub(super) max_retries: u32,
    /// Whether the verifier forgets its conversation after each failed round (default true).
    pub(super) verifier_reset_context: bool,
}

impl Default for GoalLimits {
    fn default() -> Self {
        Self {
            max_iters: 10,
            max_retries: 3,
            verifier_reset_context: true,
        }
    }
}

/// What a run carries from one call of the pipeline to the next (a resumed reply continues its
/// budget, as the reference's does).
#[derive(Debug, Default)]
pub(super) struct Progress {
    pub(super) iters: u32,
    pub(super) executor_retries: u32,
    pub(super) verifier_retries: u32,
    pub(super) goal: Vec<towerscope_core::ContentBlock>,
    pub(super) report: Option<String>,
    pub(super) executor_final: Option<towerscope_core::Msg>,
    pub(super) outcome: Option<GoalOutcome>,
}
