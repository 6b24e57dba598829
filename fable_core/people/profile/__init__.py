"""The profile: what Fable knows of each user, used as context whenever the assistant talks to
them: the facts they state, what the assistant noticed and recorded, and a summary a model
learns from both (or the user writes)."""
