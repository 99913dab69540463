import Testing
@testable import ANCS

// MARK: - Control Point and Data Source

extension ProviderTests {
    @Suite("Provider: Control Point and Data Source")
    struct ControlPoint {
        @Test("Get Notification Attributes: one tuple per requested attribute, in the order requested")
        func getNotificationAttributes() throws {
            var provider = makeProvider()
            let uid = try add(mail, to: &provider)
            let command = GetNotificationAttributes(notificationUID: uid, attributes: [
                .init(.message, maxLength: 100), .init(.appIdentifier), .init(.title, maxLength: 0xFFFF),
                .init(.date), .init(.messageSize), .init(.negativeActionLabel), .init(.title, maxLength: 3),
            ])
            let actions = try write(.getNotificationAttributes(command), from: phone, to: &provider)

            #expect(responses(actions) == [.success])
            let response = try #require(notificationAttributes(dataSourceFragments(actions, to: phone), answering: command))
            #expect(response.attributes == [
                NotificationAttribute(.message, "See you at noon?"),
                NotificationAttribute(.appIdentifier, "com.apple.mobilemail"),
                NotificationAttribute(.title, "Alice"),
                NotificationAttribute(.date, "20140322T154200"),
                NotificationAttribute(.messageSize, "16"),
                NotificationAttribute(.negativeActionLabel, "Clear"),
                NotificationAttribute(.title, "Ali"),
            ])
            #expect(emitted(actions) == [.notificationAttributesSent(phone, command)])
        }

        @Test("An empty or missing attribute has Length 0: never set, and reserved AttributeIDs")
        func missingAttributesHaveLengthZero() throws {
            var provider = makeProvider()
            let bare = ProviderNotification(appIdentifier: "com.example.bare")
            let uid = try add(bare, to: &provider)
            // Reserved NotificationAttributeIDs 8 and 200 carry no max length.
            let bytes: [UInt8] = [0x00] + uidBytes(uid) + [0x01, 0x10, 0x00, 0x02, 0x10, 0x00, 0x03, 0x10, 0x00, 0x04, 0x05, 0x06, 0x07, 0x08, 0xC8]
            let actions = provider.controlPointWritten(phone, bytes)
            let command = try #require({ if case .getNotificationAttributes(let c) = try ControlPointCommand.decode(bytes) { c } else { nil } }())
            let response = try #require(notificationAttributes(dataSourceFragments(actions, to: phone), answering: command))
            #expect(response.attributes.map(\.id.rawValue) == [1, 2, 3, 4, 5, 6, 7, 8, 200])
            #expect(response.attributes.allSatisfy { $0.value.isEmpty })
        }

        @Test("MessageSize is the full message length in bytes, independent of the MaxLen asked for Message")
        func messageSizeIsFullLength() throws {
            var provider = makeProvider()
            var long = mail
            long.message = String(repeating: "é", count: 600)  // 1200 bytes
            let uid = try add(long, to: &provider)
            let command = GetNotificationAttributes(notificationUID: uid, attributes: [.init(.message, maxLength: 10), .init(.messageSize)])
            let actions = try write(.getNotificationAttributes(command), from: phone, to: &provider)
            let response = try #require(notificationAttributes(dataSourceFragments(actions, to: phone), answering: command))
            #expect(response[.message]?.count == 10)
            #expect(response[.messageSize] == "1200")
            #expect(response[.messageSize]?.messageSize == 1200)
        }

        @Test("A value never exceeds the MaxLen asked: truncated bytewise, cutting a multi-byte UTF-8 sequence")
        func bytewiseTruncation() throws {
            var provider = makeProvider()
            var text = mail
            text.title = "Héllo"          // 48 C3 A9 6C 6C 6F
            text.subtitle = "👍 ok"       // F0 9F 91 8D 20 6F 6B
            text.message = "日本語"        // E6 97 A5 E6 9C AC E8 AA 9E
            let uid = try add(text, to: &provider)
            let command = GetNotificationAttributes(notificationUID: uid, attributes: [
                .init(.title, maxLength: 2), .init(.subtitle, maxLength: 3), .init(.message, maxLength: 4),
                .init(.title, maxLength: 0), .init(.message, maxLength: 9),
            ])
            let actions = try write(.getNotificationAttributes(command), from: phone, to: &provider)
            let response = try #require(notificationAttributes(dataSourceFragments(actions, to: phone), answering: command))
            #expect(response.attributes.map(\.value.bytes) == [
                [0x48, 0xC3],
                [0xF0, 0x9F, 0x91],
                [0xE6, 0x97, 0xA5, 0xE6],
                [],
                [0xE6, 0x97, 0xA5, 0xE6, 0x9C, 0xAC, 0xE8, 0xAA, 0x9E],
            ])
            // The consumer decodes leniently: the cut sequence is dropped.
            #expect(response.attributes[0].value.string == "H")
            #expect(response.attributes[2].value.string == "日")
        }

        @Test("A response larger than ATT MTU − 3 is split into several GATT notifications", arguments: [23, 185, 517])
        func fragmentation(mtu: Int) throws {
            var provider = makeProvider([(phone, mtu, true, true)])
            var long = mail
            long.message = String(repeating: "0123456789", count: 150)  // 1500 bytes
            let uid = try add(long, to: &provider)
            let command = GetNotificationAttributes(notificationUID: uid, attributes: [
                .init(.appIdentifier), .init(.title, maxLength: 0xFFFF), .init(.message, maxLength: 0xFFFF), .init(.date),
            ])
            let actions = try write(.getNotificationAttributes(command), from: phone, to: &provider)
            let fragments = dataSourceFragments(actions, to: phone)

            let expected = DataSourceResponse.notificationAttributes(NotificationAttributesResponse(notificationUID: uid, attributes: [
                NotificationAttribute(.appIdentifier, "com.apple.mobilemail"), NotificationAttribute(.title, "Alice"),
                NotificationAttribute(.message, AttributeValue(long.message!)), NotificationAttribute(.date, "20140322T154200"),
            ]))
            let total = expected.encode().count
            #expect(fragments.count == (total + mtu - 4) / (mtu - 3))
            #expect(fragments.dropLast().allSatisfy { $0.count == mtu - 3 })
            #expect(fragments.last!.count <= mtu - 3)
            #expect(Array(fragments.joined()) == expected.encode())
            let response = try #require(notificationAttributes(fragments, answering: command))
            #expect(DataSourceResponse.notificationAttributes(response) == expected)
        }

        @Test("An MTU exchange changes the fragment size of later responses")
        func mtuUpdate() throws {
            var provider = makeProvider([(phone, 23, true, true)])
            var long = mail
            long.message = String(repeating: "x", count: 400)
            let uid = try add(long, to: &provider)
            let command = ControlPointCommand.getNotificationAttributes(GetNotificationAttributes(notificationUID: uid, attributes: [.init(.message)]))
            #expect(dataSourceFragments(try write(command, from: phone, to: &provider), to: phone).first?.count == 20)
            provider.mtuChanged(phone, 247)
            #expect(provider.mtu(of: phone) == 247)
            #expect(dataSourceFragments(try write(command, from: phone, to: &provider), to: phone).first?.count == 244)
            // Out-of-range MTUs are clamped to what BLE allows.
            provider.mtuChanged(phone, 5000)
            #expect(provider.mtu(of: phone) == 517)
            provider.mtuChanged(phone, 0)
            #expect(provider.mtu(of: phone) == 23)
        }

        @Test("The write response comes before the Data Source notifications")
        func writeResponseBeforeDataSource() throws {
            var provider = makeProvider([(phone, 23, true, true)])
            let uid = try add(mail, to: &provider)
            let actions = try write(.getNotificationAttributes(GetNotificationAttributes(notificationUID: uid, attributes: [.init(.title), .init(.subtitle), .init(.message), .init(.date)])), from: phone, to: &provider)
            guard case .respond(phone, .success) = actions.first else {
                Issue.record("first action is \(String(describing: actions.first))")
                return
            }
            #expect(dataSourceCount(actions) == actions.count - 2)
            guard case .emit = actions.last else {
                Issue.record("the event does not come last")
                return
            }
        }

        @Test("The NP answers commands in the order it received them")
        func commandsAnsweredInOrder() throws {
            var provider = makeProvider([(phone, 23, true, true)])
            let first = try add(mail, to: &provider)
            let second = try add(call, to: &provider)
            provider.registerApp(identifier: "com.apple.mobilephone", displayName: "Phone")
            let commands: [ControlPointCommand] = [
                .getNotificationAttributes(GetNotificationAttributes(notificationUID: second, attributes: [.init(.title), .init(.positiveActionLabel)])),
                .getAppAttributes(GetAppAttributes(appIdentifier: "com.apple.mobilephone")),
                .getNotificationAttributes(GetNotificationAttributes(notificationUID: first, attributes: [.init(.message, maxLength: 5)])),
            ]
            var reassembler = DataSourceReassembler()
            var stream: [[UInt8]] = []
            for (index, command) in commands.enumerated() {
                reassembler.expect(DataSourceRequest(command)!, id: UInt32(index))
                stream += dataSourceFragments(try write(command, from: phone, to: &provider), to: phone)
            }
            var answered: [DataSourceReassembler.Event] = []
            for fragment in stream { reassembler.feed(fragment) { answered.append($0) } }
            #expect(answered == [
                .response(0, .notificationAttributes(NotificationAttributesResponse(notificationUID: second, attributes: [NotificationAttribute(.title, "Bob"), NotificationAttribute(.positiveActionLabel, "Answer")]))),
                .response(1, .appAttributes(AppAttributesResponse(appIdentifier: "com.apple.mobilephone", attributes: [AppAttribute(.displayName, "Phone")]))),
                .response(2, .notificationAttributes(NotificationAttributesResponse(notificationUID: first, attributes: [NotificationAttribute(.message, "See y")]))),
            ])
        }

        @Test("Get App Attributes: DisplayName from the registry; reserved AppAttributeIDs have Length 0")
        func getAppAttributes() throws {
            var provider = makeProvider()
            provider.registerApp(identifier: "com.apple.mobilemail", displayName: "Mail")
            let command = GetAppAttributes(appIdentifier: "com.apple.mobilemail", attributes: [.displayName, AppAttributeID(rawValue: 9), .displayName])
            let actions = try write(.getAppAttributes(command), from: phone, to: &provider)
            #expect(responses(actions) == [.success])
            let response = try #require(appAttributes(dataSourceFragments(actions, to: phone), answering: command))
            #expect(response.attributes == [AppAttribute(.displayName, "Mail"), AppAttribute(AppAttributeID(rawValue: 9), ""), AppAttribute(.displayName, "Mail")])
            #expect(emitted(actions) == [.appAttributesSent(phone, command)])

            // A later registration replaces the name.
            provider.registerApp(identifier: "com.apple.mobilemail", displayName: "Post")
            let renamed = try write(.getAppAttributes(GetAppAttributes(appIdentifier: "com.apple.mobilemail")), from: phone, to: &provider)
            #expect(appAttributes(dataSourceFragments(renamed, to: phone), answering: GetAppAttributes(appIdentifier: "com.apple.mobilemail"))?[.displayName] == "Post")
        }

        @Test("An app known only from its notifications answers DisplayName with Length 0, even after they are removed")
        func appWithoutRegisteredName() throws {
            var provider = makeProvider()
            let uid = try add(mail, to: &provider)
            let command = GetAppAttributes(appIdentifier: "com.apple.mobilemail")
            let response = appAttributes(dataSourceFragments(try write(.getAppAttributes(command), from: phone, to: &provider), to: phone), answering: command)
            #expect(response?.attributes == [AppAttribute(.displayName, "")])
            #expect(provider.notificationCenter.displayName(ofApp: "com.apple.mobilemail") == "")

            _ = try provider.remove(uid)
            #expect(responses(try write(.getAppAttributes(command), from: phone, to: &provider)) == [.success])
        }

        @Test("AppIdentifiers are matched by their bytes: no Unicode equivalence, no lenient decoding; an unknown one is 0xA2")
        func appIdentifiersMatchByBytes() throws {
            var provider = makeProvider()
            let precomposed = "caf\u{E9}"
            let decomposed = "cafe\u{301}"
            provider.registerApp(identifier: precomposed, displayName: "Precomposed")
            provider.registerApp(identifier: "c\u{FFFD}", displayName: "Replacement")

            // "é" decomposed names another app than "é" precomposed.
            let other = GetAppAttributes(appIdentifier: decomposed)
            #expect(try write(.getAppAttributes(other), from: phone, to: &provider)
                == [.respond(phone, .attError(.invalidParameter)), .emit(.commandRejected(phone, .unknownApp(decomposed)))])
            // Invalid UTF-8 names no app, not even the one its lenient decoding spells.
            let invalid = GetAppAttributes(appIdentifierBytes: [0x63, 0xFF])
            let rejected = provider.controlPointWritten(phone, [0x01, 0x63, 0xFF, 0x00, 0x00])
            #expect(responses(rejected) == [.attError(.invalidParameter)])
            #expect(dataSourceCount(rejected) == 0)

            // Registered separately, each is answered with its own name and its own bytes echoed.
            provider.registerApp(identifier: decomposed, displayName: "Decomposed")
            for (identifier, name) in [(precomposed, "Precomposed"), (decomposed, "Decomposed"), ("c\u{FFFD}", "Replacement")] {
                let command = GetAppAttributes(appIdentifier: identifier)
                let fragments = dataSourceFragments(try write(.getAppAttributes(command), from: phone, to: &provider), to: phone)
                #expect(Array(fragments.joined().prefix(1 + identifier.utf8.count + 1)) == [0x01] + Array(identifier.utf8) + [0x00])
                #expect(appAttributes(fragments, answering: command)?[.displayName] == AttributeValue(name))
            }
            #expect(provider.notificationCenter.displayName(ofAppBytes: invalid.appIdentifierBytes) == nil)
        }

        // MARK: Errors

        @Test("0xA0 Unknown command: CommandID not recognized")
        func unknownCommand() throws {
            var provider = makeProvider()
            let uid = try add(mail, to: &provider)
            for commandID: UInt8 in [3, 0x7F, 0xFF] {
                let actions = provider.controlPointWritten(phone, [commandID] + uidBytes(uid) + [0x00])
                #expect(responses(actions) == [.attError(.unknownCommand)])
                #expect(rejection(actions)?.code == .unknownCommand)
                #expect(dataSourceCount(actions) == 0)
            }
        }

        @Test("0xA1 Invalid command: command malformed")
        func invalidCommand() throws {
            var provider = makeProvider()
            let uid = try add(mail, to: &provider)
            let malformed: [[UInt8]] = [
                [],                                         // empty write
                [0x00, 0x01, 0x00],                          // NotificationUID cut short
                [0x00] + uidBytes(uid),                      // no attribute asked
                [0x00] + uidBytes(uid) + [0x01, 0xFF],       // Title without its 2-byte max length
                [0x01] + Array("com.apple.mobilemail".utf8), // AppIdentifier without NUL
                [0x01] + Array("com.apple.mobilemail".utf8) + [0x00],  // no app attribute asked
                [0x02] + uidBytes(uid),                      // Perform Notification Action is 6 bytes
                [0x02] + uidBytes(uid) + [0x01, 0x00],
                [0x00] + uidBytes(uid) + Array(repeating: 0x00, count: 508),  // longer than an ATT write
            ]
            for bytes in malformed {
                let actions = provider.controlPointWritten(phone, bytes)
                #expect(responses(actions) == [.attError(.invalidCommand)], "\(bytes.prefix(8))")
                #expect(actions.count == 2)
                #expect(dataSourceCount(actions) == 0)
            }
            #expect(provider.notificationCenter.count == 1)
        }

        @Test("0xA2 Invalid parameter: a NotificationUID or AppIdentifier that names nothing on the NP")
        func invalidParameter() throws {
            var provider = makeProvider()
            let uid = try add(mail, to: &provider)
            let removed = try add(mail, to: &provider)
            _ = try provider.remove(removed)

            let cases: [(ControlPointCommand, ProviderRejection)] = [
                (.getNotificationAttributes(GetNotificationAttributes(notificationUID: NotificationUID(999), attributes: [.init(.title)])), .unknownNotification(NotificationUID(999))),
                (.getNotificationAttributes(GetNotificationAttributes(notificationUID: removed, attributes: [.init(.title)])), .unknownNotification(removed)),
                (.getAppAttributes(GetAppAttributes(appIdentifier: "com.example.nobody")), .unknownApp("com.example.nobody")),
                (.performNotificationAction(PerformNotificationAction(notificationUID: removed, actionID: .negative)), .unknownNotification(removed)),
                (.performNotificationAction(PerformNotificationAction(notificationUID: uid, actionID: ActionID(rawValue: 2))), .unknownAction(uid, ActionID(rawValue: 2))),
            ]
            for (command, expected) in cases {
                let actions = try write(command, from: phone, to: &provider)
                #expect(actions == [.respond(phone, .attError(.invalidParameter)), .emit(.commandRejected(phone, expected))])
            }
            #expect(provider.notificationCenter.uids == [uid])
        }

        @Test("0xA3 Action failed: the notification's flags do not announce the action")
        func actionNotAnnounced() throws {
            var provider = makeProvider()
            let uid = try add(mail, to: &provider)  // NegativeAction only
            let actions = try write(.performNotificationAction(PerformNotificationAction(notificationUID: uid, actionID: .positive)), from: phone, to: &provider)
            #expect(actions == [.respond(phone, .attError(.actionFailed)), .emit(.commandRejected(phone, .actionNotAnnounced(uid, .positive)))])
            #expect(provider.notificationCenter[uid] == mail)
        }

        @Test("0xA3 Action failed: an action configured to fail is not performed")
        func configuredFailure() throws {
            var provider = makeProvider()
            var stubborn = call
            stubborn.negativeActionEffect = .fail
            let uid = try add(stubborn, to: &provider)
            let actions = try write(.performNotificationAction(PerformNotificationAction(notificationUID: uid, actionID: .negative)), from: phone, to: &provider)
            #expect(actions == [.respond(phone, .attError(.actionFailed)), .emit(.commandRejected(phone, .actionFailed(uid, .negative)))])
            #expect(provider.notificationCenter.uids == [uid])
        }

        @Test("When the write fails, no Data Source notification is produced for that command")
        func noDataSourceAfterFailedWrite() throws {
            var provider = makeProvider([(phone, 23, true, true)])
            _ = try add(mail, to: &provider)
            let hostile: [[UInt8]] = [
                [0x09], [0x00, 0x00], [0x00, 0x63, 0x00, 0x00, 0x00, 0x01, 0xFF, 0xFF],
                [0x01] + Array("x".utf8) + [0x00, 0x00], [0x02, 0x00, 0x00, 0x00, 0x00, 0x00],
            ]
            for bytes in hostile {
                let actions = provider.controlPointWritten(phone, bytes)
                guard case .respond(phone, .attError) = actions.first else {
                    Issue.record("\(bytes) was not refused")
                    continue
                }
                #expect(actions.allSatisfy { if case .notify = $0 { false } else { true } })
            }
        }

        @Test("A Get … Attributes command from a consumer not subscribed to Data Source fails with ATT 0xFD")
        func dataSourceNotSubscribed() throws {
            var provider = makeProvider([(phone, 185, true, false)])
            let uid = try add(mail, to: &provider)
            let actions = try write(.getNotificationAttributes(GetNotificationAttributes(notificationUID: uid, attributes: [.init(.title)])), from: phone, to: &provider)
            #expect(actions == [.respond(phone, .attError(ATTErrorCode.cccdImproperlyConfigured)), .emit(.commandRejected(phone, .dataSourceNotSubscribed))])
            // Actions produce no Data Source traffic, so they need no subscription.
            let performed = try write(.performNotificationAction(PerformNotificationAction(notificationUID: uid, actionID: .negative)), from: phone, to: &provider)
            #expect(responses(performed) == [.success])
        }

        @Test("A Control Point write from a connection the provider does not know is answered with an ATT error")
        func writeFromUnknownConnection() throws {
            var provider = makeProvider()
            let uid = try add(mail, to: &provider)
            let bytes = try ControlPointCommand.getNotificationAttributes(GetNotificationAttributes(notificationUID: uid, attributes: [.init(.title)])).encode()
            let actions = provider.controlPointWritten(car, bytes)
            #expect(actions == [.respond(car, .attError(ATTErrorCode.unlikelyError)), .emit(.commandRejected(car, .unknownConnection))])
            #expect(provider.setSubscription(car, .notificationSource, enabled: true).isEmpty)
            #expect(provider.connections == [phone])
        }

        @Test("Any bytes written to the Control Point are answered exactly once, response first, without trapping")
        func hostileWrites() throws {
            var provider = makeProvider([(phone, 23, true, true)])
            var long = call
            long.message = String(repeating: "ü", count: 200)
            _ = try add(long, to: &provider)
            _ = try add(mail, to: &provider)
            provider.registerApp(identifier: "a", displayName: "App A")
            var generator = HostileWriteGenerator(seed: 0xA2C5)
            for _ in 0..<3000 {
                var bytes: [UInt8] = []
                let length = Int(generator.next() % 40)
                for index in 0..<length {
                    var byte = UInt8(truncatingIfNeeded: generator.next())
                    // Bias toward commands that decode and name live notifications.
                    if index == 0 { byte %= 4 } else if index < 5, generator.next() % 2 == 0 { byte = index == 1 ? byte % 3 : 0 }
                    bytes.append(byte)
                }
                let actions = provider.controlPointWritten(phone, bytes)
                #expect(responses(actions).count == 1)
                guard case .respond(phone, let result) = actions.first else {
                    Issue.record("\(bytes): the write response is not first")
                    continue
                }
                if result != .success { #expect(actions.count == 2) }
            }
        }

        @Test("A response is bounded: values are cut so it fits maximumResponseLength, with every tuple present")
        func responseBudget() throws {
            var provider = makeProvider(configuration: ProviderConfiguration(maximumResponseLength: 1000))
            var long = mail
            long.message = String(repeating: "m", count: 800)
            let uid = try add(long, to: &provider)
            // A hostile consumer asks the message many times over.
            let command = GetNotificationAttributes(notificationUID: uid, attributes: Array(repeating: .init(.message, maxLength: 0xFFFF), count: 100) + [.init(.appIdentifier)])
            let actions = try write(.getNotificationAttributes(command), from: phone, to: &provider)
            let fragments = dataSourceFragments(actions, to: phone)
            #expect(fragments.reduce(0) { $0 + $1.count } <= 1000)
            let response = try #require(notificationAttributes(fragments, answering: command))
            #expect(response.attributes.count == 101)
            #expect(response.attributes.reduce(0) { $0 + $1.value.count } == 1000 - 5 - 3 * 101)
            // The AppIdentifier is never cut: the messages share what is left after it.
            #expect(response.attributes[0].value.count == 692 - 20)
            #expect(response.attributes[1].value.count == 0)
            #expect(response.attributes[100] == NotificationAttribute(.appIdentifier, "com.apple.mobilemail"))
        }

        @Test("The response budget cuts only Title, Subtitle and Message: a 16 KB message keeps MessageSize, Date, AppIdentifier and the labels whole",
              arguments: [23, 185, 517])
        func budgetNeverCutsShortAttributes(_ mtu: Int) throws {
            var provider = makeProvider([(phone, mtu, true, true)])
            var long = mail
            long.message = String(repeating: "m", count: 16_384)
            long.positiveActionLabel = "Reply"
            let uid = try add(long, to: &provider)
            let all = (0...7).map { NotificationAttributeRequest(NotificationAttributeID(rawValue: $0), maxLength: 0xFFFF) }
            let command = GetNotificationAttributes(notificationUID: uid, attributes: all)
            let actions = try write(.getNotificationAttributes(command), from: phone, to: &provider)
            let fragments = dataSourceFragments(actions, to: phone)
            #expect(fragments.allSatisfy { $0.count <= mtu - 3 })
            #expect(fragments.reduce(0) { $0 + $1.count } == ProviderConfiguration.default.maximumResponseLength)
            let response = try #require(notificationAttributes(fragments, answering: command))
            #expect(response[.appIdentifier] == "com.apple.mobilemail")
            #expect(response[.title] == "Alice")
            #expect(response[.subtitle] == "Lunch")
            #expect(response[.messageSize] == "16384")
            #expect(response[.date] == "20140322T154200")
            #expect(response[.positiveActionLabel] == "Reply")
            #expect(response[.negativeActionLabel] == "Clear")
            // The message alone is cut, to what the budget leaves.
            let short = 20 + 5 + 5 + 5 + 15 + 5 + 5
            #expect(response[.message]?.count == 16_384 - 5 - 3 * 8 - short)
        }
    }
}
