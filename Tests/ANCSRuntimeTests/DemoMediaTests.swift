// The demo's now-playing line: the phone plays, the person presses next
// track twice and pause on the accessory; each track is shown once its
// values have arrived (a title cut at MTU 23 read in full first), each
// press ends once, performed, at a fast and at a slow link.

import Testing
import ANCS
import ANCSDemo
import ANCSSimulation

@Suite struct DemoMediaTests {
    struct Run {
        var tracks: [String] = []
        var states: [String] = []
        var results: [(RemoteCommandID, AMSClientError?)] = []
        var cutShown = false
    }

    static func play(mtu: Int, interval: Duration) -> (DemoRun, Run) {
        let demo = DemoRun(link: .init(mtu: mtu, connectionInterval: interval))
        let box = Box<Run>()
        box.value = Run()
        demo.onLine = { _, line in
            switch line {
            case .nowPlaying(let playing, _, let cut):
                box.value!.tracks.append("\(playing.artist?.string ?? "") — \(playing.title?.string ?? "")")
                box.value!.states.append(playing.playback?.state.description ?? "")
                if !cut.isEmpty { box.value!.cutShown = true }
            case .mediaResult(let command, let error):
                box.value!.results.append((command, error))
            default: break
            }
        }
        demo.runToEnd()
        demo.endSession()
        return (demo, box.value!)
    }

    @Test(arguments: [23, 185])
    func theNowPlayingLineFollowsThePlayerAndThePresses(mtu: Int) {
        let (demo, run) = Self.play(mtu: mtu, interval: .milliseconds(30))
        #expect(demo.isFinished)
        #expect(run.results.map { $0.0 } == [.nextTrack, .nextTrack, .pause])
        #expect(run.results.allSatisfy { $0.1 == nil })
        // Each track once, whole (at MTU 23 the title is read in full before the line).
        #expect(run.tracks.last == "Sigur Rós — Hoppípolla")
        #expect(run.tracks.contains("Daft Punk — Harder, Better, Faster, Stronger"))
        #expect(!run.cutShown)
        #expect(run.states.first == "paused" && run.states.last == "paused" && run.states.contains("playing"))
        #expect(demo.mediaLink.commands == [.nextTrack, .nextTrack, .pause])  // what the accessory sent (play was pressed on the phone)
        #expect(demo.mediaLink.mostOperationsInFlight == 1)
        #expect(demo.summary.failedRequests == 0)
    }

    @Test func onASlowLinkEveryPressStillEndsPerformed() {
        let (demo, run) = Self.play(mtu: 23, interval: .seconds(4))
        #expect(demo.isFinished)
        #expect(run.results.count == 3)
        #expect(run.results.allSatisfy { $0.1 == nil })
        #expect(demo.mediaLink.player.state == .paused)
        #expect(demo.mediaLink.mostOperationsInFlight == 1)
    }
}
