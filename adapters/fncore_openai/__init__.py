"""OpenAI adapter for fncore (Chat Completions and Responses); built in the adapters issue."""
