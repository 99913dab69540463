// Findings of the libFuzzer targets (Fuzz/Targets), each replayed here as
// the scenario its minimized input encodes, with the invariant that failed.
//
// The fuzz harnesses are not part of the package (they are compiled by
// scripts/fuzz.sh with the sanitizers, in module ANCS), so these tests
// re-create only the replay of the input bytes; the inputs themselves are
// kept in Fuzz/corpus/<target>/, so every fuzz run (`scripts/fuzz.sh 0`
// replays the corpora only) also runs them through the full harness.

import Testing
@testable import ANCS

@Suite("Fuzz regressions")
struct FuzzRegressionTests {
    private func feed(_ reassembler: inout DataSourceReassembler, _ fragment: [UInt8]) -> [DataSourceReassembler.Event] {
        var events: [DataSourceReassembler.Event] = []
        reassembler.feed(fragment) { events.append($0) }
        return events
    }

    private let unsolicited = DataSourceReassembler.Event.unsolicited(DecodingError(.unsolicitedResponse, at: 0))

    /// data-source input `00 00 00` (unlimitedValueLength 1024; one 1-byte
    /// notification, 0x00; finish): a Data Source byte with no request
    /// registered read the head of the empty request queue through its
    /// buffer's base address, which an empty array has too (SEGV).
    @Test("Data Source bytes with no request registered are unsolicited", arguments: [0x00, 0x01, 0x02, 0xFF] as [UInt8])
    func bytesWithNothingRegistered(first: UInt8) {
        var reassembler = DataSourceReassembler(configuration: .init(unlimitedValueLength: 1024))
        #expect(feed(&reassembler, [first]) == [unsolicited])
        #expect(feed(&reassembler, [first, 0x02, 0, 0, 0, 0x01, 0x00, 0x00]) == [unsolicited])
        var events: [DataSourceReassembler.Event] = []
        reassembler.finish { events.append($0) }
        #expect(events.isEmpty)
        #expect(reassembler.outstandingCount == 0)
    }

    /// The same read after the queue was emptied by a response: its buffer
    /// still holds the answered request, whose header the repeated response
    /// matches. It must be unsolicited, not a second response.
    @Test("a response repeated after its request ended is unsolicited")
    func repeatedResponse() throws {
        let command = GetNotificationAttributes(notificationUID: NotificationUID(2), attributes: [NotificationAttributeRequest(.title, maxLength: 8)])
        let response = DataSourceResponse.notificationAttributes(NotificationAttributesResponse(
            notificationUID: NotificationUID(2), attributes: [NotificationAttribute(.title, "Alice")]))
        var reassembler = DataSourceReassembler()
        reassembler.expect(DataSourceRequest(command), id: 7)
        #expect(feed(&reassembler, response.encode()) == [.response(7, response)])
        #expect(feed(&reassembler, response.encode()) == [unsolicited])
        for byte in response.encode() { _ = feed(&reassembler, [byte]) }
        #expect(reassembler.outstandingCount == 0)
    }

    /// consumer input Fuzz/corpus/consumer/8567bbf8…: a session, then Data
    /// Source bytes while no fetch is outstanding, reached the same read
    /// through `Consumer.received(dataSource:)`.
    @Test("the consumer reports Data Source bytes with no fetch outstanding as a protocol error")
    func consumerUnsolicited() {
        var consumer = Consumer()
        _ = consumer.linkUp(mtu: 23, at: .zero)
        _ = consumer.subscriptionCompleted(.dataSource, .success, at: .zero)
        _ = consumer.subscriptionCompleted(.notificationSource, .success, at: .zero)
        let actions = consumer.received(dataSource: [0x00, 0x02, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00], at: .zero)
        #expect(actions == [.emit(.protocolError(DecodingError(.unsolicitedResponse, at: 0)))])
        #expect(consumer.pendingRequestCount == 0)
    }
}
