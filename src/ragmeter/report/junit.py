"""A gate's checks as JUnit XML, for CI systems that show test reports."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from datetime import datetime, timezone
from typing import Any

#: Characters XML 1.0 cannot hold at all (not even escaped).
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _xml_text(value: Any) -> str:
    return _NOT_XML.sub(lambda m: f"\\x{ord(m.group()):02x}", str(value))


def render_junit(document: dict[str, Any]) -> str:
    """JUnit XML from a gate report's document (``GateReport.to_dict()``): one test case per
    check, ``<failure>`` for failed and ``<skipped>`` for skipped checks, in one test suite
    named after the run (timestamp in UTC); the gate's warnings (a run cut short), one a line,
    in the suite's ``<system-err>``. Text XML cannot hold is shown as escapes."""
    checks = document["checks"]
    failures = sum(1 for c in checks if c["verdict"] == "fail")
    skipped = sum(1 for c in checks if c["verdict"] == "skipped")
    attributes = {"tests": str(len(checks)), "failures": str(failures), "errors": "0", "skipped": str(skipped)}
    suites = ET.Element("testsuites", {"name": "ragmeter gate", **attributes})
    stamp = datetime.now(timezone.utc).replace(tzinfo=None).isoformat(timespec="seconds")
    suite = ET.SubElement(suites, "testsuite", {"name": _xml_text(f"ragmeter gate {document['run']}"), **attributes, "timestamp": stamp})
    for check in checks:
        name = _xml_text(f"{check['metric']}: {check['rule']}")
        case = ET.SubElement(suite, "testcase", {"classname": f"ragmeter.gate.{check['kind']}", "name": name, "time": "0"})
        message = _xml_text(check["message"])
        if check["verdict"] == "fail":
            failure = ET.SubElement(case, "failure", {"message": message, "type": f"{check['kind']} check failed"})
            failure.text = _xml_text(f"{check['metric']}: {check['rule']}\nobserved: {check['observed']}\n{check['message']}")
        elif check["verdict"] == "skipped":
            ET.SubElement(case, "skipped", {"message": message})
        ET.SubElement(case, "system-out").text = _xml_text(f"observed: {check['observed']}")
    if document.get("warnings"):
        ET.SubElement(suite, "system-err").text = _xml_text("\n".join(f"warning: {w}" for w in document["warnings"]))
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"
