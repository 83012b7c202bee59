"""``adcli rules list`` and ``adcli rules show``: what rules exist, as plain rows."""

from __future__ import annotations

from dataclasses import dataclass

from ..rules.listing import list_rules, show_rule


@dataclass
class RuleListing:
    """Rows ``{name, source, argnums, note}``, by name."""

    rows: list[dict]


@dataclass
class RuleInfo:
    """Everything adcli knows about one callable (see rules.listing.show_rule)."""

    info: dict


def rules_list(source: str = "all") -> RuleListing:
    return RuleListing(list_rules(source))


def rules_show(name: str) -> RuleInfo:
    return RuleInfo(show_rule(name))
