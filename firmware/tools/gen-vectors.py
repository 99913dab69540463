#!/usr/bin/env python3
"""conformance.json -> Vectors.swift for the firmware test image.

Every case of every section becomes a Swift value built with the public API
of module ANCS (the expected event, command or response) plus what the image
prints. A section, a case kind or a field this script does not know is an
error, so a new kind of vector cannot be skipped silently.

Usage: gen-vectors.py conformance.json Vectors.swift
"""
import json
import sys

from swift_literals import bytes_literal, fail, from_hex, keys, swift_string

EVENTS = {"added": 0, "modified": 1, "removed": 2}
FLAGS = {"silent": 0, "important": 1, "preExisting": 2, "positiveAction": 3, "negativeAction": 4}
CATEGORIES = {"other": 0, "incomingCall": 1, "missedCall": 2, "voicemail": 3, "social": 4,
              "schedule": 5, "email": 6, "news": 7, "healthAndFitness": 8,
              "businessAndFinance": 9, "location": 10, "entertainment": 11}
NOTIFICATION_ATTRIBUTES = {"appIdentifier": 0, "title": 1, "subtitle": 2, "message": 3,
                           "messageSize": 4, "date": 5, "positiveActionLabel": 6,
                           "negativeActionLabel": 7}
APP_ATTRIBUTES = {"displayName": 0}
ACTIONS = {"positive": 0, "negative": 1}
SECTIONS = ("notificationSource", "controlPoint", "dataSource")


def named(table, value, where):
    """A name from the table, or a reserved value given as a number."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if value not in table:
        fail(where, "unknown name %r" % (value,))
    return table[value]


def swift_bytes(hex_text, where):
    return bytes_literal(from_hex(hex_text, where))


def ns_case(case, where):
    keys(case, ("name", "hex", "expect", "error"), where)
    bytes_ = swift_bytes(case["hex"], where)
    if "error" in case:
        return "NSVector(name: %s, bytes: %s, expected: .error(%s))" % (
            swift_string(case["name"]), bytes_, swift_string(case["error"]))
    e = case["expect"]
    keys(e, ("kind", "event", "flags", "category", "categoryCount", "uid"), where)
    if e["kind"] != "notificationSource":
        fail(where, "unknown expect kind %r" % e["kind"])
    flags = 0
    for flag in e["flags"]:
        value = named(FLAGS, flag, where)
        flags |= (1 << value) if not isinstance(flag, int) else value
    names = ",".join(str(f) for f in e["flags"])
    line = "%s flags=[%s] category=%s count=%d uid=%d" % (
        e["event"], names, e["category"], e["categoryCount"], e["uid"])
    event = ("NotificationSourceEvent(eventID: EventID(rawValue: %d), eventFlags: EventFlags(rawValue: 0x%02x), "
             "categoryID: CategoryID(rawValue: %d), categoryCount: %d, notificationUID: NotificationUID(%d))") % (
        named(EVENTS, e["event"], where), flags, named(CATEGORIES, e["category"], where),
        e["categoryCount"], e["uid"])
    return "NSVector(name: %s, bytes: %s, expected: .event(%s, line: %s))" % (
        swift_string(case["name"]), bytes_, event, swift_string(line))


def attribute_request(a, where):
    keys(a, ("id", "maxLength"), where)
    attribute = named(NOTIFICATION_ATTRIBUTES, a["id"], where)
    if "maxLength" in a:
        return "NotificationAttributeRequest(NotificationAttributeID(rawValue: %d), maxLength: %d)" % (attribute, a["maxLength"])
    return "NotificationAttributeRequest(NotificationAttributeID(rawValue: %d))" % attribute


def cp_command(e, where):
    kind = e["kind"]
    if kind == "getNotificationAttributes":
        keys(e, ("kind", "uid", "attributes"), where)
        return (".getNotificationAttributes(GetNotificationAttributes(notificationUID: NotificationUID(%d), attributes: [%s]))"
                % (e["uid"], ", ".join(attribute_request(a, where) for a in e["attributes"])))
    if kind == "getAppAttributes":
        keys(e, ("kind", "appIdentifier", "attributes"), where)
        ids = []
        for a in e["attributes"]:
            keys(a, ("id",), where)
            ids.append("AppAttributeID(rawValue: %d)" % named(APP_ATTRIBUTES, a["id"], where))
        return ".getAppAttributes(GetAppAttributes(appIdentifier: %s, attributes: [%s]))" % (
            swift_string(e["appIdentifier"]), ", ".join(ids))
    if kind == "performNotificationAction":
        keys(e, ("kind", "uid", "action"), where)
        return ".performNotificationAction(PerformNotificationAction(notificationUID: NotificationUID(%d), actionID: ActionID(rawValue: %d)))" % (
            e["uid"], named(ACTIONS, e["action"], where))
    fail(where, "unknown expect kind %r" % kind)


def cp_case(case, where):
    keys(case, ("name", "hex", "expect", "error"), where)
    bytes_ = swift_bytes(case["hex"], where)
    if "error" in case:
        # The NP answers 0xA0 to an unknown CommandID, 0xA1 to any other malformed command.
        code = 0xA0 if case["error"] == "unknown command" else 0xA1
        return "CPVector(name: %s, bytes: %s, expected: .error(%s, answer: 0x%02X))" % (
            swift_string(case["name"]), bytes_, swift_string(case["error"]), code)
    return "CPVector(name: %s, bytes: %s, expected: .command(%s))" % (
        swift_string(case["name"]), bytes_, cp_command(case["expect"], where))


def ds_case(case, where):
    keys(case, ("name", "request", "fragments", "expect", "error"), where)
    request = swift_bytes(case["request"], where)
    fragments = "[" + ", ".join(swift_bytes(f, where) for f in case["fragments"]) + "]"
    head = "DSVector(name: %s, request: %s, fragments: %s" % (swift_string(case["name"]), request, fragments)
    if "error" in case:
        return head + ", expected: .error(%s))" % swift_string(case["error"])
    e = case["expect"]
    parsed_date, parsed_size = "nil", "nil"
    if e["kind"] == "notificationAttributes":
        keys(e, ("kind", "uid", "attributes"), where)
        attributes = []
        for a in e["attributes"]:
            keys(a, ("id", "value", "parsed"), where)
            attribute = named(NOTIFICATION_ATTRIBUTES, a["id"], where)
            attributes.append("NotificationAttribute(NotificationAttributeID(rawValue: %d), AttributeValue(%s))" % (
                attribute, swift_string(a["value"])))
            if "parsed" in a:
                if a["id"] == "date":
                    d, t = a["parsed"].split("T")
                    y, mo, da = (int(x) for x in d.split("-"))
                    h, mi, s = (int(x) for x in t.split(":"))
                    parsed_date = "ANCSDate(year: %d, month: %d, day: %d, hour: %d, minute: %d, second: %d)" % (y, mo, da, h, mi, s)
                elif a["id"] == "messageSize":
                    parsed_size = str(int(a["parsed"]))
                else:
                    fail(where, "a parsed value for %r" % a["id"])
        response = ".notificationAttributes(NotificationAttributesResponse(notificationUID: NotificationUID(%d), attributes: [%s]))" % (
            e["uid"], ", ".join(attributes))
    elif e["kind"] == "appAttributes":
        keys(e, ("kind", "appIdentifier", "attributes"), where)
        attributes = []
        for a in e["attributes"]:
            keys(a, ("id", "value"), where)
            attributes.append("AppAttribute(AppAttributeID(rawValue: %d), AttributeValue(%s))" % (
                named(APP_ATTRIBUTES, a["id"], where), swift_string(a["value"])))
        response = ".appAttributes(AppAttributesResponse(appIdentifier: %s, attributes: [%s]))" % (
            swift_string(e["appIdentifier"]), ", ".join(attributes))
    else:
        fail(where, "unknown expect kind %r" % e["kind"])
    return head + ", expected: .response(%s, date: %s, messageSize: %s))" % (response, parsed_date, parsed_size)


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: gen-vectors.py conformance.json Vectors.swift")
    with open(sys.argv[1], encoding="utf-8") as f:
        document = json.load(f)
    unknown = set(document) - set(SECTIONS) - {"format"}
    if unknown:
        fail(sys.argv[1], "unknown section(s) %s: the firmware test does not run them" % sorted(unknown))
    makers = {"notificationSource": ("NSVector", "nsVectors", ns_case),
              "controlPoint": ("CPVector", "cpVectors", cp_case),
              "dataSource": ("DSVector", "dsVectors", ds_case)}
    out = ["// Generated by firmware/tools/gen-vectors.py from conformance.json. Do not edit.",
           "import ANCS", ""]
    counts = []
    for section in SECTIONS:
        cases = document.get(section, [])
        if not cases:
            fail(sys.argv[1], "section %s is missing or empty" % section)
        type_name, variable, maker = makers[section]
        out.append("let %s: [%s] = [" % (variable, type_name))
        for index, case in enumerate(cases):
            where = "%s[%d] (%s)" % (section, index, case.get("name", "?"))
            if ("expect" in case) == ("error" in case):
                fail(where, "needs exactly one of expect and error")
            out.append("    " + maker(case, where) + ",")
        out.append("]")
        out.append("")
        counts.append(len(cases))
    out.append("/// Cases per section in the JSON: every one must be run.")
    out.append("let vectorCounts = (notificationSource: %d, controlPoint: %d, dataSource: %d)" % tuple(counts))
    with open(sys.argv[2], "w", encoding="utf-8") as f:
        f.write("\n".join(out) + "\n")
    print("gen-vectors.py: %d Notification Source, %d Control Point, %d Data Source cases" % tuple(counts))


main()
