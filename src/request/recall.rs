//! A request compactor's recall: what a handle names, given back from a body of the history
//! that named it, for a caller that keeps that history whole (issue 53).

use super::{Compactor, Request, call_boundaries, fresh, push_calls};
use crate::format::Format;
use crate::note;
use crate::recall::RecallError;

impl Compactor {
    /// What `handle` names in the history of `body`, given back from the history itself: for a
    /// caller that keeps it whole (an agent framework's state) and compacts what each model
    /// call sends with this compactor, its settings naming handles ([`crate::Settings::handles`]) or
    /// an archive folder. The body's history is replayed from its start as
    /// [`Compactor::compact`] replays it (the same call boundaries, so every compaction an
    /// earlier, shorter body went through is made again), and the messages the compaction that
    /// named `handle` removed are returned one JSON message a line, each as the body holds it,
    /// as an archive file holds them. Nothing is written or cached.
    ///
    /// # Errors
    /// [`RecallError::Malformed`] for no handle; [`RecallError::History`] for a body that
    /// cannot be read (what [`Compactor::compact`] would forward unchanged);
    /// [`RecallError::NotInHistory`] when no compaction of it names `handle`.
    pub fn recall(
        &self,
        body: &[u8],
        format: Format,
        path_model: Option<&str>,
        handle: &str,
    ) -> std::result::Result<String, RecallError> {
        let handle = crate::recall::checked(handle)?;
        let request = self
            .read(format, (path_model, None), body)
            .map_err(|forward| RecallError::History(forward.verdict.reason.unwrap_or_default()))?;
        let Request {
            options,
            conversation,
            ..
        } = request;
        let boundaries = call_boundaries(&conversation);
        let mut state = fresh(&conversation, options)
            .map_err(|err| RecallError::History(format!("options: {err}")))?;
        push_calls(&mut state, conversation.messages.into_iter(), &boundaries);
        state
            .session
            .archived()
            .iter()
            .find(|(path, _)| note::handle(path) == handle)
            .map(|(_, content)| content.clone())
            .ok_or_else(|| RecallError::NotInHistory(handle.to_string()))
    }
}
