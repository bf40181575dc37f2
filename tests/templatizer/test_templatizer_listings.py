"""Lists a tool prints as text blocks (a title line, then `• Key: value` bullets), ids written as text, and the
words a first look at the user's world sends (a category, a label): the tenth pass's rules."""

from __future__ import annotations

from tests.recorded import Session
from toolreel.core.model import JSON
from toolreel.core.sandbox import run_code
from toolreel.templatizer import templatize, verify
from toolreel.templatizer._values import key_similarity

VMS = [
    ("db-main", 100, "RUNNING", "pve1"),
    ("web-01", 101, "RUNNING", "pve1"),
    ("web-02", 102, "STOPPED", "pve2"),
    ("old-web-03", 105, "RUNNING", "pve2"),
    ("web-04", 108, "RUNNING", "pve3"),
]


def _vm_listing(vms: list[tuple[str, int, str, str]]) -> str:
    blocks = [f"\U0001f5c3\ufe0f {n} (ID: {i})\n  • Status: {status}\n  • Node: {node}" for n, i, status, node in vms]
    return "\U0001f5c3\ufe0f Virtual Machines\n\n" + "\n\n".join(blocks)


def test_blocks_of_bullets_under_a_title_line_are_rows_and_a_loop_walks_the_ones_the_calls_handled() -> None:
    # Proxmox's VM list: the name and `(ID: n)` on the title line, the rest as bullets. The node of web-01 is also
    # db-main's (pve1): the id sent beside it says which element the call acts on.
    s = Session()
    s.call("get_vms", {}, _vm_listing(VMS))
    for name, vmid, status, node in VMS:
        if name.startswith("web-") and status == "RUNNING":
            s.call("execute_vm_command", {"node": node, "vmid": str(vmid), "command": "systemctl restart nginx"}, "ok")
    result = templatize([s.steps], name="t")
    view = result.template.step("get_vms_1_rows")
    assert view.code is not None
    rows = run_code(view.code, {"text": _vm_listing(VMS[:2]), "shape": "records", "level": 0})
    assert rows == [
        {"title": "db-main", "ID": "100", "Status": "RUNNING", "Node": "pve1"},
        {"title": "web-01", "ID": "101", "Status": "RUNNING", "Node": "pve1"},
    ]
    assert result.template.step("select_get_vms_1_rows").input["where"] == [
        {"key": "title", "op": "starts with", "value": "web-"},
        {"key": "Status", "op": "==", "value": "RUNNING"},
    ]
    assert {item.value for item in result.likely_inputs if item.ticked} == {"web-"}
    loop = result.template.step("execute_vm_command_each")
    assert loop.input == {"node": "@item.Node", "vmid": "@item.ID", "command": "systemctl restart nginx"}
    assert verify(result, [s.steps]).verified


def test_an_id_run_together_with_its_entity_matches_the_entity_s_id_listed_by_the_entity_s_tool() -> None:
    assert key_similarity("vmid", "ID", "proxmox__get_vms") == 0.9  # `vm` + `id`, and the tool lists vms
    assert key_similarity("vmid", "ID", "proxmox__get_nodes") == 0.7
    assert key_similarity("valid", "name", "svc__list") == 0.0  # only beside an `id` is a word read as one


def test_a_flag_s_state_printed_with_its_emoji_is_the_task_s_condition_not_an_input() -> None:
    flags = [("new-checkout", True, "no"), ("holiday-banner", True, "yes"), ("legacy", False, "yes")]
    flags += [("beta-dark-mode", True, "yes")]
    lines = [
        f"**{name}**\n  • production: {'✅ enabled' if on else '⭕ disabled'}\n  • stale: {stale}"
        for name, on, stale in flags
    ]
    s = Session()
    listing = "\U0001f6a9 Feature flags in project 'web' (4)\n\n" + "\n\n".join(lines)
    s.call("list_feature_flags", {"project": "web"}, listing)
    for name, on, stale in flags:
        if on and stale == "yes":
            s.call("toggle_feature_flag", {"flagName": name, "enabled": False}, f"Feature flag '{name}' disabled")
    result = templatize([s.steps], name="t")
    assert result.template.step("select_list_feature_flags_1_rows").input["where"] == [
        {"key": "production", "op": "==", "value": "✅ enabled"},
        {"key": "stale", "op": "==", "value": "yes"},
    ]
    assert result.template.step("toggle_feature_flag_each").input == {"flagName": "@item.title", "enabled": False}
    states = {item.value: item.ticked for item in result.likely_inputs if item.value in ("✅ enabled", "yes")}
    assert states == {"✅ enabled": False, "yes": False}
    assert verify(result, [s.steps]).verified


def test_a_word_a_first_read_sends_under_a_key_naming_a_part_of_the_user_s_world_is_the_user_s() -> None:
    def first_read(key: str, word: str) -> bool:
        s = Session()
        s.call("list_incidents", {key: word, "limit": 50}, {"result": [{"number": "INC0011004"}]})
        s.call("add_comment", {"incident_id": "INC0011004", "comment": "Looked at."}, {"ok": True})
        likely = templatize([s.steps], name="t", read_only=("svc__list_incidents",)).likely_inputs
        return next((item.ticked for item in likely if item.value == word), False)  # (or it stayed literal)

    assert first_read("category", "network") and first_read("subreddit", "selfhosted")
    assert first_read("environmentSlug", "staging")
    # a state's category, a kind, a branch: settings of the task, proposed unticked at most
    assert not first_read("status_category", "live") and not first_read("type", "prometheus")
    assert not first_read("ref", "main")


def test_a_loop_over_the_elements_carrying_a_label_takes_the_label_as_the_user_s() -> None:
    labelled = [(311, ["billing"]), (312, ["spam"]), (315, ["spam-review"]), (318, ["spam", "bot"])]
    conversations: list[JSON] = [{"id": number, "labels": list(labels)} for number, labels in labelled]
    s = Session()
    s.call("list_conversations", {"status": "pending"}, {"data": {"payload": conversations}})
    for number, labels in labelled:
        if "spam" in labels:
            s.call("toggle_status", {"conversation_id": number, "status": "resolved"}, {"ok": True})
    result = templatize([s.steps], name="t")
    label = next(item for item in result.likely_inputs if item.value == "spam")
    assert label.ticked, label.reason


def test_one_call_taking_the_ids_of_the_elements_a_condition_keeps_takes_them_from_a_select() -> None:
    # Cloudinary's add-tag with the public ids of the assets in one folder that carry a tag: one call, not a loop.
    assets: list[JSON] = [
        {"public_id": "products/teapots/blue-glaze", "tags": ["discontinued", "teapot"]},
        {"public_id": "products/teapots/cast-iron", "tags": ["teapot"]},
        {"public_id": "products/cups/espresso-pair", "tags": ["discontinued"]},
        {"public_id": "products/cups/latte-bowl", "tags": ["cup", "new"]},
    ]
    s = Session()
    s.call("search_assets", {"expression": "folder:products"}, {"resources": assets})
    ids = ["products/teapots/blue-glaze", "products/cups/espresso-pair"]
    s.call("add_tag", {"public_ids": ids, "tag": "archive-2026"}, {"ok": True})
    result = templatize([s.steps], name="t")
    assert result.template.step("add_tag_1").input == {
        "public_ids": "@select_resources[*].public_id",
        "tag": "archive-2026",
    }
    assert result.template.step("select_resources").input == {
        "items": "@search_assets_1.resources",
        "where": [{"key": "tags", "op": "has", "value": "discontinued"}],
    }
    assert verify(result, [s.steps]).verified


def test_addresses_at_one_domain_are_kept_by_the_domain_not_by_an_ending_a_subdomain_shares() -> None:
    emails = ["dana@gmail.com", "priya@northwind.io", "ben@sub.northwind.io", "alice@northwind.iot", "Tom@Northwind.io"]
    profiles: list[JSON] = [{"id": f"01JBX{i:04d}", "attributes": {"email": e}} for i, e in enumerate(emails)]
    s = Session()
    s.call("get_profiles", {"page_size": 10}, {"data": profiles})
    s.call("add_profiles_to_list", {"list_id": "Rk4Tq9", "profile_ids": ["01JBX0001", "01JBX0004"]}, "added")
    result = templatize([s.steps], name="t")
    assert result.template.step("select_data").input["where"] == [
        {"key": "attributes.email", "op": "at domain", "value": "northwind.io"}
    ]
    assert result.template.step("add_profiles_to_list_1").input["profile_ids"] == "@select_data[*].id"
    assert {item.name: item.ticked for item in result.likely_inputs if item.value == "northwind.io"} == {
        "email_domain": True
    }
    assert verify(result, [s.steps]).verified


TORRENTS = [
    ("debian-12.8.0-amd64-DVD-1.iso", "8f2c1a9e0b7d4c3f6a5e2d1c0b9a8f7e6d5c4b3a", "downloading"),
    ("Fedora-Workstation-Live-x86_64-41.iso", "3b9d7e1f5a2c8e4d6f0a1b3c5d7e9f1a2b4c6d8e", "stalledDL"),
    ("archlinux-2026.12.01-x86_64.iso", "c4e6a8b0d2f4e6a8c0b2d4f6a8c0e2b4d6f8a0c2", "stalledDL"),
    ("ubuntu-24.04.1-desktop-amd64.iso", "0a1b2c3d4e5f60718293a4b5c6d7e8f901234567", "metaDL"),
]


def _torrent_listing(torrents: list[tuple[str, str, str]]) -> str:
    blocks = [
        f"\u2022 {name}\n  hash: {h}\n  state: {state} | progress: 12.0% | seeds: 3" for name, h, state in torrents
    ]
    return f"Found {len(blocks)} torrent(s):\n\n" + "\n".join(blocks)


def test_bulleted_titles_with_fields_below_are_rows_even_with_no_blank_line_between() -> None:
    # qBittorrent's list: `• name`, then indented `hash:` and `state: … | progress: …` lines, one block after another
    s = Session()
    s.call("get_torrent_list", {"category": "linux-isos", "filter": "downloading"}, _torrent_listing(TORRENTS))
    for _, torrent_hash, state in TORRENTS:
        if state == "stalledDL":
            s.call("pause_torrent", {"hashes": torrent_hash}, f"Torrent(s) {torrent_hash} paused successfully.")
    result = templatize([s.steps], name="t")
    view = result.template.step("get_torrent_list_1_rows")
    assert view.code is not None
    rows = run_code(view.code, {"text": _torrent_listing(TORRENTS[:2]), "shape": "records", "level": 0})
    assert rows == [
        {"title": name, "hash": h, "state": state, "progress": "12.0%", "seeds": "3"} for name, h, state in TORRENTS[:2]
    ]
    loop = result.template.step("pause_torrent_each")
    assert loop.for_each == '@get_torrent_list_1_rows[?(@.state == "stalledDL")]'
    assert loop.input == {"hashes": "@item.hash"}
    assert verify(result, [s.steps]).verified
