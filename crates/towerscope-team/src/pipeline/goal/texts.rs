//! The reference's texts and schemas of the goal pipeline (AgentScope 2.0.11's `GoalPipeline`):
//! what the executor and the verifier are told, and the structured output each must produce.

use serde_json::json;
use towerscope_core::StructuredSchema;

/// Added to the goal the executor receives.
pub(super) const REPORT_HINT: &str = "<system-reminder>When you finish the goal, you should summarize your output (if \
     any) so that a verifier can check whether you have achieved the goal (e.g., file paths, entry points, how-to-run, \
     runtime environment, etc.).</system-reminder>";

/// What the executor is told when its reply ended without a valid report. (The reference
/// leaves the tag open; it is closed here.)
pub(super) const REPORT_RETRY: &str = "<system-reminder>You have failed to generate valid execution report. You \
     should call the 'GenerateStructuredOutput' tool with a valid structured output that matches the schema. \
     </system-reminder>";

/// Before the goal, in what the verifier is told.
pub(super) const VERIFY_OPENING: &str = "<system-reminder>Now you should verify the work done by the executor. The \
     goal is as follows, you should verify whether the executor has achieved the goal.\n<goal>";

/// After the goal, in what the verifier is told.
pub(super) fn verify_closing(report: &str) -> String {
    format!("</goal>\nThe executor's achievement report is as follows:\n<report>{report}</report></system-reminder>")
}

/// Before the goal, in what the verifier is told when its reply ended without a valid result.
pub(super) const VERDICT_RETRY_OPENING: &str = "<system-reminder>You have failed to generate valid verification \
     result. You should call the 'GenerateStructuredOutput' tool with a valid structured output that matches the \
     schema. Recall the verification requirements as follows:\n<goal>";

/// After the goal, in that reminder.
pub(super) const VERDICT_RETRY_CLOSING: &str = "</goal></system-reminder>";

/// What the executor is told when the verifier failed its work.
pub(super) fn feedback(message: &str) -> String {
    format!(
        "<system-reminder>You've failed to pass the verification. Now recorrect your work based on the following \
         feedback:\n{message}</system-reminder>"
    )
}

/// The executor's structured output.
pub(super) fn report_schema() -> StructuredSchema {
    StructuredSchema {
        name: "ExecutionReport".to_owned(),
        schema: json!({
            "type": "object",
            "description": "The output of an execution.",
            "properties": {
                "report": {
                    "type": "string",
                    "description": "An achievement report of the given goal. E.g. file paths, entry points, \
                        how-to-run, runtime environment, etc. So that a verifier can check if you have achieved \
                        the goal. "
                }
            },
            "required": ["report"]
        }),
    }
}

/// The verifier's structured output.
pub(super) fn verdict_schema() -> StructuredSchema {
    StructuredSchema {
        name: "VerificationResult".to_owned(),
        schema: json!({
            "type": "object",
            "description": "The result of a verification.",
            "properties": {
                "result": {
                    "type": "string",
                    "enum": ["pass", "fail", "impossible"],
                    "description": "The verification result, which can be 'pass', 'fail', or 'impossible'. \
                        'impossible' means the given goal is impossible to achieve, and the executor should stop \
                        trying."
                },
                "message": {
                    "type": "string",
                    "description": "If not passed, the message should explain why it failed, and what needs to \
                        be fixed. List the specific issues that need to be addressed, including where to exactly \
                        find them (e.g., file paths, line numbers)."
                }
            },
            "required": ["result", "message"]
        }),
    }
}
