"""Conventions a user declares in a file, not in code: how to find a tool span of their own format and
where its tool name, arguments, result, error and call id are (docs/conventions.md, "Your own
conventions").

`files` reads and validates a conventions file (YAML; pydantic models, unknown keys refused, each
mistake one line naming the file, the line and the key path) and compiles it once into matchers;
`active` holds the compiled conventions this process recognises with, which
collector/recognise/conventions.py tries before the built-in adapters. Neither loads pydantic or RE2
until a file is given: a server with no conventions file pays nothing (issue 33).
"""
