// A test harness through Gabp.Bridge, run on Mono by tests/csharp_bindings.rs against BindingsMod: calls with a
// time limit, the mod's errors as exceptions, events through a callback, close. Usage: BridgeHarness ENDPOINT TOKEN.
using System;
using System.Collections.Generic;
using System.Threading;

static class BridgeHarness
{
    static int failures;

    static void Expect(bool ok, string what)
    {
        if (ok) return;
        failures++;
        Console.Error.WriteLine("FAIL: " + what);
    }

    static int Main(string[] args)
    {
        var events = new List<Gabp.Event>();
        var bridge = Gabp.Bridge.Connect(args[0], args[1]);
        using (bridge)
        {
            var echoed = bridge.Call("demo/echo", "{\"value\":\"ü\"}", TimeSpan.FromSeconds(5));
            Expect(echoed == "{\"value\":\"ü\"}", "demo/echo answered " + echoed);

            string fromHandler = null;
            var subscription = bridge.Subscribe("world/ticked", e =>
            {
                // A handler may call the bridge it came from.
                var answer = bridge.Call("demo/echo", "{\"value\":" + e.Seq + "}", TimeSpan.FromSeconds(5));
                lock (events) { events.Add(e); fromHandler = answer; Monitor.PulseAll(events); }
            });
            bridge.Call("world/tick");
            bridge.Call("world/tick");
            lock (events)
            {
                var until = DateTime.UtcNow.AddSeconds(5);
                while (events.Count < 2 && DateTime.UtcNow < until) Monitor.Wait(events, TimeSpan.FromMilliseconds(100));
                Expect(events.Count == 2, events.Count + " world/ticked events, expected 2");
                Expect(events.Count == 2 && events[1].Seq > events[0].Seq && events[0].PayloadJson.Contains("\"tick\""),
                    "events in seq order with their payloads");
                Expect(events.Count == 2 && events[1].Missed == 0 && fromHandler == "{\"value\":" + events[1].Seq + "}",
                    "a call from the handler answered " + fromHandler);
            }

            try { bridge.Call("demo/later", "{\"n\":1}", TimeSpan.FromMilliseconds(1)); Expect(false, "demo/later beat a 1 ms limit"); }
            catch (Gabp.GabpException e) { Expect(e.Status == Gabp.Status.Timeout, "a time limit: " + e.Status + " " + e.Message); }

            try { bridge.Call("no/such"); Expect(false, "no/such answered"); }
            catch (Gabp.GabpRemoteException e) { Expect(e.Code == -32400 && e.Message.Contains("no/such"), "no/such: " + e.Code + " " + e.Message); }

            try { bridge.Call("demo/code"); Expect(false, "demo/code answered"); }
            catch (Gabp.GabpRemoteException e) { Expect(e.Code == -32010 && e.ErrorJson.Contains("no such player"), "demo/code: " + e.ErrorJson); }

            try { bridge.Call("demo/echo", "[1]"); Expect(false, "an array of arguments was sent"); }
            catch (Gabp.GabpException e) { Expect(e.Status == Gabp.Status.Json && e.Message.Contains("arguments"), "bad arguments: " + e.Message); }

            subscription.Dispose();
            subscription.Dispose();
        }
        try { bridge.Call("demo/echo"); Expect(false, "a call after Dispose"); }
        catch (ObjectDisposedException) { }

        try { Gabp.Bridge.Discover("/nonexistent/bridge.json"); Expect(false, "a bridge.json that is not there"); }
        catch (Gabp.GabpException e) { Expect(e.Status == Gabp.Status.Io && e.Message.Contains("/nonexistent/bridge.json"), "discover: " + e.Message); }

        Console.WriteLine(failures == 0 ? "harness: all checks passed" : "harness: " + failures + " checks failed");
        return failures == 0 ? 0 : 1;
    }
}
