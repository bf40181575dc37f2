"""What a query's field says of the value under it: whose or where (`owner:`, `project:`), the thing itself
(`name_label:`, `host:`), or a state or a category (`status:`, `issue_type:`). `_inside` reads queries with it,
`_likely` weighs the values it finds."""

from __future__ import annotations

import re
from typing import Final

__all__ = ["named_read", "naming_field", "scope_field", "state_field"]

_STATE_FIELD_RE: Final = re.compile(r"(?:^|_)(?:state|status|phase|type|kind|stage|category|priority)$", re.I)


# A query's field naming whose or where (`owner:ana`, `project:platform/infra`): a value under it is the user's, as
# the one value a query selects by is, even beside others.
_SCOPE_FIELDS: Final = frozenset(
    {
        *("project", "repo", "repository", "org", "organization", "team", "owner", "author", "assignee", "user"),
        *("customer", "reporter", "creator", "member", "manager", "person"),
    }
)


def scope_field(field: str) -> bool:
    """A query's field naming whose or where (`owner:`, `project:`): a value under it is the user's, beside others."""
    return field.lower() in _SCOPE_FIELDS


# A query's field naming the thing itself (Xen Orchestra's `name_label:gitlab`, `host:web-02`): a word under it is
# the user's, not the query's vocabulary (a tag, `tag:urgent`, or an owner beside other terms may be either).
_NAMING_FIELD_RE: Final = re.compile(r"(?i)^(?:name_label|app|application|host|hostname)$")


def naming_field(field: str) -> bool:
    """A query's field naming the thing itself (`name_label:`, `host:`)."""
    return bool(_NAMING_FIELD_RE.match(field))


def state_field(field: str) -> bool:
    """A query's field naming a state or a category (`status`, `ExecutionStatus`, `issue_type`)."""
    words = "_".join(re.findall(r"[A-Z]?[a-z]+", field)).lower()
    return bool(_STATE_FIELD_RE.search(field) or _STATE_FIELD_RE.search(words))


# A tool whose name says it reads (`list-events`, `get_alias`, `search_findings`): what a server that annotates none
# of its tools still says of them.
_READ_VERB_RE: Final = re.compile(r"(?i)(?:list|get|search|find|query|show|describe)(?:[-_]|$)")


def named_read(tool: str) -> bool:
    """`server__list-events`: a tool named as a read (its verb first)."""
    return bool(_READ_VERB_RE.match(tool.split("__")[-1]))
