//! What each task tool does to the list, and the text the model gets back (the reference's,
//! word for word). `Ok` is a successful result, `Err` an error result.

use std::collections::HashSet;
use std::fmt::Write as _;

use serde_json::{Map, Value};

use super::task::{Task, TaskState, next_id};

fn text<'a>(input: &'a Value, key: &str) -> Option<&'a str> {
    input.get(key).and_then(Value::as_str)
}

fn ids(input: &Value, key: &str) -> Option<Vec<String>> {
    input
        .get(key)
        .and_then(Value::as_array)
        .map(|ids| ids.iter().filter_map(|id| id.as_str().map(str::to_owned)).collect())
}

/// The most tasks a list holds. The reference has no bound; without one, a model creating tasks
/// in a loop grows the saved state, every `TaskList` answer and each create's id scan without
/// end.
pub const MAX_TASKS: usize = 1_000;

/// `TaskCreate`: appends a pending task, while the list holds fewer than [`MAX_TASKS`].
pub(crate) fn create(tasks: &mut Vec<Task>, input: &Value) -> Result<String, String> {
    if tasks.len() >= MAX_TASKS {
        return Err(format!(
            "The task list is full ({MAX_TASKS} tasks): delete tasks that are done (TaskUpdate with status \
             `deleted`) before creating more"
        ));
    }
    let id = next_id(tasks);
    let mut task = Task::new(
        id.clone(),
        text(input, "subject").unwrap_or_default(),
        text(input, "description").unwrap_or_default(),
    );
    if let Some(Value::Object(metadata)) = input.get("metadata") {
        task.metadata = metadata.clone();
    }
    let reply = format!("Task (id={id}) created successfully: {}", task.subject);
    tasks.push(task);
    Ok(reply)
}

/// `TaskGet`: one task in full.
pub(crate) fn get(tasks: &[Task], input: &Value) -> Result<String, String> {
    let id = text(input, "task_id").unwrap_or_default();
    let Some(task) = tasks.iter().find(|t| t.id == id) else {
        return Err("Task not found".to_owned());
    };
    let mut out = format!(
        "Task (id={}): {}\nStatus: {}\nDescription: {}",
        task.id,
        task.subject,
        task.state.as_str(),
        task.description
    );
    if let Some(owner) = task.owner.as_deref().filter(|o| !o.is_empty()) {
        let _ = write!(out, "\nOwner: {owner}");
    }
    let refs = |ids: &[String]| ids.iter().map(|id| format!("#{id}")).collect::<Vec<_>>().join(", ");
    if !task.blocked_by.is_empty() {
        let _ = write!(out, "\nBlocked by: {}", refs(&task.blocked_by));
    }
    if !task.blocks.is_empty() {
        let _ = write!(out, "\nBlocks: {}", refs(&task.blocks));
    }
    if !task.metadata.is_empty() {
        let _ = write!(out, "\nMetadata: {}", Value::Object(task.metadata.clone()));
    }
    Ok(out)
}

/// `TaskList`: one line per task.
pub(crate) fn list(tasks: &[Task]) -> Result<String, String> {
    if tasks.is_empty() {
        return Ok("No tasks available.".to_owned());
    }
    let lines: Vec<String> = tasks
        .iter()
        .map(|t| {
            let mut line = format!("{} [{}] {}", t.id, t.state.as_str(), t.subject);
            if let Some(owner) = t.owner.as_deref().filter(|o| !o.is_empty()) {
                let _ = write!(line, "({owner})");
            }
            if !t.blocked_by.is_empty() {
                let _ = write!(line, "[blocked by {}]", t.blocked_by.join(", "));
            }
            line
        })
        .collect();
    Ok(lines.join("\n"))
}

/// Relates the task `one` to each of `others` (known ids, each once): `one` blocks them
/// (`one_blocks`), or they block `one`. A relation already there is not added again. One pass
/// over the tasks, each list checked against a set: linear in the tasks and the ids, however
/// many the model sends.
fn relate(tasks: &mut [Task], one: &str, others: &[String], one_blocks: bool) {
    let others_set: HashSet<&str> = others.iter().map(String::as_str).collect();
    for task in tasks.iter_mut() {
        if task.id == one {
            let list = if one_blocks {
                &mut task.blocks
            } else {
                &mut task.blocked_by
            };
            let present: HashSet<&str> = list.iter().map(String::as_str).collect();
            let added: Vec<String> = others
                .iter()
                .filter(|other| !present.contains(other.as_str()))
                .cloned()
                .collect();
            list.extend(added);
        }
        if others_set.contains(task.id.as_str()) {
            let list = if one_blocks {
                &mut task.blocked_by
            } else {
                &mut task.blocks
            };
            if !list.iter().any(|b| b == one) {
                list.push(one.to_owned());
            }
        }
    }
}

/// The ids of `candidates` that are `known` tasks and not yet in `present`, once each, in order.
fn new_relations(known: &HashSet<String>, present: &[String], candidates: Vec<String>) -> Vec<String> {
    let present: HashSet<&str> = present.iter().map(String::as_str).collect();
    let mut seen = HashSet::new();
    candidates
        .into_iter()
        .filter(|b| !present.contains(b.as_str()) && known.contains(b) && seen.insert(b.clone()))
        .collect()
}

/// `TaskUpdate`: changes the fields given, deletes the task with status `deleted`.
pub(crate) fn update(tasks: &mut Vec<Task>, input: &Value) -> Result<String, String> {
    let id = text(input, "task_id").unwrap_or_default().to_owned();
    let Some(index) = tasks.iter().rposition(|t| t.id == id) else {
        return Err(format!("TaskNotFoundError: The task (id={id}) does not exist."));
    };
    let mut updated: Vec<&str> = Vec::new();
    if let Some(subject) = text(input, "subject").filter(|s| !s.is_empty()) {
        tasks[index].subject = subject.to_owned();
        updated.push("subject");
    }
    if let Some(description) = text(input, "description") {
        tasks[index].description = description.to_owned();
        updated.push("description");
    }
    let (blocks, blocked_by) = (ids(input, "add_blocks"), ids(input, "add_blocked_by"));
    // The task ids, read once for both lists (the model may name thousands), and only for them.
    let known: HashSet<String> = if blocks.is_some() || blocked_by.is_some() {
        tasks.iter().map(|t| t.id.clone()).collect()
    } else {
        HashSet::new()
    };
    if let Some(blocks) = blocks {
        let new = new_relations(&known, &tasks[index].blocks, blocks);
        if !new.is_empty() {
            updated.push("add_blocks");
            relate(tasks, &id, &new, true);
        }
    }
    if let Some(blocked_by) = blocked_by {
        let new = new_relations(&known, &tasks[index].blocked_by, blocked_by);
        if !new.is_empty() {
            updated.push("add_blocked_by");
            relate(tasks, &id, &new, false);
        }
    }
    if let Some(status) = text(input, "status").filter(|s| !s.is_empty()) {
        let state = match status {
            "deleted" => {
                tasks.remove(index);
                for task in tasks.iter_mut() {
                    task.blocks.retain(|b| *b != id);
                    task.blocked_by.retain(|b| *b != id);
                }
                return Ok(format!("Task (id={id}) has been deleted."));
            }
            "in_progress" => TaskState::InProgress,
            "completed" => TaskState::Completed,
            _ => TaskState::Pending,
        };
        updated.push("status");
        tasks[index].state = state;
        if state == TaskState::Completed {
            // A completed task no longer blocks its dependents.
            for task in tasks.iter_mut() {
                task.blocked_by.retain(|b| *b != id);
            }
        }
    }
    if let Some(owner) = text(input, "owner") {
        tasks[index].owner = Some(owner.to_owned());
        updated.push("owner");
    }
    if let Some(Value::Object(metadata)) = input
        .get("metadata")
        .filter(|m| m.as_object().is_some_and(|m| !m.is_empty()))
    {
        merge(&mut tasks[index].metadata, metadata);
        updated.push("metadata");
    }
    let mut reply = if updated.is_empty() {
        format!(
            "No updates were made to the task (id={id}). Make sure you provided at least one field to update and the \
             values are correct."
        )
    } else {
        format!("Update task (id={id}) {}.", updated.join(", "))
    };
    if tasks[index].state == TaskState::Completed {
        reply.push_str("\n\nTask completed. Call TaskList now to find your next available task or see if your work unblocked others.");
    }
    Ok(reply)
}

/// Merges `changes` into `metadata`: a `null` value removes its key.
fn merge(metadata: &mut Map<String, Value>, changes: &Map<String, Value>) {
    for (key, value) in changes {
        if value.is_null() {
            metadata.remove(key);
        } else {
            metadata.insert(key.clone(), value.clone());
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

    /// The relations as they were added before they were hashed: a list filtered by scans,
    /// then one scan of the tasks per id (the test's reference).
    fn update_by_scans(tasks: &mut [Task], id: &str, blocks: &[String], blocked_by: &[String]) {
        fn relate_one(tasks: &mut [Task], blocker: &str, blocked: &str) {
            for task in tasks.iter_mut() {
                if task.id == blocker && !task.blocks.iter().any(|b| b == blocked) {
                    task.blocks.push(blocked.to_owned());
                }
                if task.id == blocked && !task.blocked_by.iter().any(|b| b == blocker) {
                    task.blocked_by.push(blocker.to_owned());
                }
            }
        }
        let Some(index) = tasks.iter().rposition(|t| t.id == id) else {
            return;
        };
        let known: Vec<String> = tasks.iter().map(|t| t.id.clone()).collect();
        let new: Vec<String> = blocks
            .iter()
            .filter(|b| !tasks[index].blocks.contains(b) && known.contains(b))
            .cloned()
            .collect();
        for blocked in &new {
            relate_one(tasks, id, blocked);
        }
        let new: Vec<String> = blocked_by
            .iter()
            .filter(|b| !tasks[index].blocked_by.contains(b) && known.contains(b))
            .cloned()
            .collect();
        for blocker in &new {
            relate_one(tasks, blocker, id);
        }
    }

    proptest::proptest! {
        /// Any lists of ids (repeated, unknown, the task's own), on tasks already related in
        /// any way (ids repeated too): the same relations, in the same order, as by scans.
        #[test]
        fn relations_are_added_as_by_scans(
            ids in proptest::collection::vec(0u8..6, 1..8),
            existing in proptest::collection::vec((0usize..8, 0u8..7, proptest::bool::ANY), 0..12),
            target in 0u8..6,
            blocks in proptest::collection::vec(0u8..7, 0..10),
            blocked_by in proptest::collection::vec(0u8..7, 0..10),
        ) {
            let mut tasks: Vec<Task> = ids.iter().map(|i| Task::new(i.to_string(), "s", "")).collect();
            for (task, other, blocks) in existing {
                if let Some(task) = tasks.get_mut(task) {
                    let list = if blocks { &mut task.blocks } else { &mut task.blocked_by };
                    list.push(other.to_string());
                }
            }
            let names = |v: &[u8]| v.iter().map(u8::to_string).collect::<Vec<_>>();
            let (blocks, blocked_by) = (names(&blocks), names(&blocked_by));
            let mut expected = tasks.clone();
            update_by_scans(&mut expected, &target.to_string(), &blocks, &blocked_by);
            let _ = update(&mut tasks, &json!({"task_id": target.to_string(), "add_blocks": blocks, "add_blocked_by": blocked_by}));
            let relations = |tasks: &[Task]| tasks.iter().map(|t| (t.blocks.clone(), t.blocked_by.clone())).collect::<Vec<_>>();
            proptest::prop_assert_eq!(relations(&tasks), relations(&expected));
        }
    }

    /// Thousands of ids, repeated, against thousands of tasks: each relation once, in order.
    #[test]
    fn thousands_of_ids_relate_each_task_once() {
        let mut tasks: Vec<Task> = (1..=5_000).map(|i| Task::new(i.to_string(), "s", "")).collect();
        let ids: Vec<String> = (0..50_000).map(|i| (2 + i % 4_999).to_string()).collect();
        update(&mut tasks, &json!({"task_id": "1", "add_blocks": ids})).unwrap();
        let expected: Vec<String> = (2..=5_000).map(|i| i.to_string()).collect();
        assert_eq!(tasks[0].blocks, expected);
        assert!(tasks[1..].iter().all(|t| t.blocked_by == ["1"]));
    }

    fn three() -> Vec<Task> {
        let mut tasks = Vec::new();
        for (subject, description) in [("Design", "d"), ("Build", "b"), ("Ship", "s")] {
            create(&mut tasks, &json!({"subject": subject, "description": description})).unwrap();
        }
        tasks
    }

    #[test]
    fn dependencies_are_kept_on_both_sides_and_released_on_completion() {
        let mut tasks = three();
        let reply = update(&mut tasks, &json!({"task_id": "2", "add_blocked_by": ["1", "9"]})).unwrap();
        assert_eq!(reply, "Update task (id=2) add_blocked_by.");
        update(
            &mut tasks,
            &json!({"task_id": "2", "add_blocks": ["3"], "owner": "bob"}),
        )
        .unwrap();
        assert_eq!(tasks[0].blocks, ["2"]);
        assert_eq!(tasks[1].blocked_by, ["1"]);
        assert_eq!(tasks[2].blocked_by, ["2"]);
        assert_eq!(
            list(&tasks).unwrap(),
            "1 [pending] Design\n2 [pending] Build(bob)[blocked by 1]\n3 [pending] Ship[blocked by 2]"
        );
        assert_eq!(
            get(&tasks, &json!({"task_id": "2"})).unwrap(),
            "Task (id=2): Build\nStatus: pending\nDescription: b\nOwner: bob\nBlocked by: #1\nBlocks: #3"
        );
        let reply = update(&mut tasks, &json!({"task_id": "1", "status": "completed"})).unwrap();
        assert_eq!(
            reply,
            "Update task (id=1) status.\n\nTask completed. Call TaskList now to find your next available task or see \
             if your work unblocked others."
        );
        assert!(tasks[1].blocked_by.is_empty());
        assert_eq!(
            update(&mut tasks, &json!({"task_id": "3", "status": "deleted"})).unwrap(),
            "Task (id=3) has been deleted."
        );
        assert!(tasks[1].blocks.is_empty());
        assert_eq!(
            create(&mut tasks, &json!({"subject": "Docs", "description": ""})).unwrap(),
            "Task (id=3) created successfully: Docs"
        );
    }

    #[test]
    fn unknown_tasks_and_empty_updates_say_so() {
        let mut tasks = three();
        assert_eq!(
            update(&mut tasks, &json!({"task_id": "7", "status": "completed"})).unwrap_err(),
            "TaskNotFoundError: The task (id=7) does not exist."
        );
        assert_eq!(get(&tasks, &json!({"task_id": "7"})).unwrap_err(), "Task not found");
        assert_eq!(
            update(&mut tasks, &json!({"task_id": "1", "subject": ""})).unwrap(),
            "No updates were made to the task (id=1). Make sure you provided at least one field to update and the \
             values are correct."
        );
        assert_eq!(list(&[]).unwrap(), "No tasks available.");
        update(&mut tasks, &json!({"task_id": "1", "metadata": {"a": 1, "b": 2}})).unwrap();
        update(&mut tasks, &json!({"task_id": "1", "metadata": {"a": null}})).unwrap();
        assert_eq!(Value::Object(tasks[0].metadata.clone()), json!({"b": 2}));
    }

    #[test]
    fn a_full_list_refuses_a_new_task_until_one_is_deleted() {
        let mut tasks = Vec::new();
        for n in 0..MAX_TASKS {
            create(&mut tasks, &json!({"subject": format!("t{n}"), "description": ""})).unwrap();
        }
        let err = create(&mut tasks, &json!({"subject": "one more", "description": ""})).unwrap_err();
        assert!(err.starts_with("The task list is full (1000 tasks)"), "{err}");
        assert_eq!(tasks.len(), MAX_TASKS);
        update(&mut tasks, &json!({"task_id": "1", "status": "deleted"})).unwrap();
        assert!(create(&mut tasks, &json!({"subject": "one more", "description": ""})).is_ok());
    }
}
