"""The execution lifecycle: every state change of an execution (`lifecycle.Lifecycle`), the
rules that decide them (`rules`, pure), and what follows an execution's end.

Nothing is imported here, so that `rules` stays importable without the engines the lifecycle
builds."""
