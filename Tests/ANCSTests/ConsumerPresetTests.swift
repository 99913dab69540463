// The microcontroller preset: its bounds, and what a phone sending the
// longest values it may can make the engine hold (the heap's worst case on a
// 32-bit target is measured by the firmware test image: firmware/test/WorstCase.swift).

import Testing
@testable import ANCS

@Suite("ConsumerConfiguration.microcontroller")
struct ConsumerPresetTests {
    @Test("its bounds")
    func bounds() {
        let preset = ConsumerConfiguration.microcontroller
        #expect(preset.maximumNotifications == 16 && preset.maximumCachedApps == 8 && preset.maximumRequests == 4)
        #expect(preset.unlimitedValueLength == 128)
        #expect(preset.eagerAttributes == ConsumerConfiguration.displayAttributes && preset.eagerAppNames)
        #expect(preset.pipeliningDepth == 1)
    }

    @Test("a phone sending every value as long as accepted fills each table to its bound, no further")
    func longestValues() throws {
        let preset = ConsumerConfiguration.microcontroller
        var consumer = sessionConsumer(preset)
        var now = Timestamp.zero
        var pending: [ConsumerAction] = []
        let request = try #require(DataSourceRequest(ControlPointCommand.getNotificationAttributes(
            GetNotificationAttributes(notificationUID: uid(1), attributes: preset.eagerAttributes))))
        let bound = request.valueBound(unlimited: preset.unlimitedValueLength)
        var largestBuffer = 0
        for raw in UInt32(1)...40 {
            now = now + .milliseconds(50)
            pending += consumer.received(notificationSource: sourceEvent(.added, raw), at: now)
            while !pending.isEmpty {
                guard case .writeControlPoint(let bytes, let token) = pending.removeFirst() else { continue }
                pending += consumer.writeCompleted(token, .success, at: now)
                let command = try ControlPointCommand.decode(bytes)
                var response: [UInt8]
                switch command {
                case .getNotificationAttributes(let asked):
                    response = [0] + asked.notificationUID.rawValue.littleEndianBytes
                    for attribute in asked.attributes {
                        let length = attribute.maxLength.map(Int.init) ?? preset.unlimitedValueLength
                        let value = attribute.id == .appIdentifier
                            ? Array("app.\(asked.notificationUID.rawValue).".utf8) + [UInt8](repeating: 0x78, count: length - "app.\(asked.notificationUID.rawValue).".utf8.count)
                            : [UInt8](repeating: 0x61, count: length)
                        response += [attribute.id.rawValue, UInt8(truncatingIfNeeded: length), UInt8(truncatingIfNeeded: length >> 8)] + value
                    }
                case .getAppAttributes(let asked):
                    response = [1] + asked.appIdentifierBytes + [0]
                    for attribute in asked.attributes {
                        response += [attribute.rawValue, UInt8(preset.unlimitedValueLength), 0] + [UInt8](repeating: 0x4E, count: preset.unlimitedValueLength)
                    }
                case .performNotificationAction:
                    continue
                }
                pending += consumer.received(dataSource: response, at: now)
                largestBuffer = max(largestBuffer, consumer.reassembler.scratch.count)
            }
        }
        #expect(consumer.liveNotifications.count == preset.maximumNotifications)
        #expect(consumer.session.appCache.count == preset.maximumCachedApps)
        #expect(consumer.liveNotifications.allSatisfy { $0[.message]?.count == 256 && $0[.appIdentifier]?.count == 128 })
        // The reassembler's buffer holds one response: at most the sum of what was asked.
        #expect(largestBuffer <= bound, "\(largestBuffer) > \(bound)")
        #expect(consumer.session.entries.isEmpty && consumer.reassembler.outstandingCount == 0)
    }
}

extension UInt32 {
    fileprivate var littleEndianBytes: [UInt8] {
        [UInt8(truncatingIfNeeded: self), UInt8(truncatingIfNeeded: self >> 8), UInt8(truncatingIfNeeded: self >> 16), UInt8(truncatingIfNeeded: self >> 24)]
    }
}
