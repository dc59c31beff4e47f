// A mod through Gabp.cs, run on Mono by tests/csharp_bindings.rs: every kind of tool, resources, an event, a
// pumping loop.
// Ends at the end of its stdin.
using System;
using System.Collections.Generic;
using System.Threading;

static class BindingsMod
{
    static int ticks;

    static int Main()
    {
        using (var mod = new Gabp.ModServer("csharp-test", "1.0.0"))
        {
            var stop = false;
            mod.Tool("demo/echo", "Answers its arguments", args => args,
                    "{\"type\":\"object\",\"properties\":{\"value\":{}},\"required\":[\"value\"]}", Gabp.ToolFlags.ReadOnly)
               .MainThreadTool("world/tick", "Counts ticks on the game's thread", args =>
                {
                    ticks++;
                    mod.Publish("world/ticked", Gabp.Json.Write(new Dictionary<string, object> { { "tick", ticks } }));
                    return Gabp.Json.Write(new Dictionary<string, object> { { "ticks", ticks }, { "thread", Thread.CurrentThread.Name } });
                })
               .AsyncTool("demo/later", "Answers from a thread of its own", call =>
                {
                    new Thread(() =>
                    {
                        var args = (Dictionary<string, object>)Gabp.Json.Parse(call.Arguments);
                        Thread.Sleep(20);
                        call.Reply(Gabp.Json.Write(new Dictionary<string, object> { { "doubled", (double)args["n"] * 2 } }));
                    }).Start();
                }, "{\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"number\"}},\"required\":[\"n\"]}")
               .Tool("demo/throw", "Fails with an exception", args => { throw new InvalidOperationException("the chunk is not loaded"); })
               .Tool("demo/code", "Fails with a GABP code", args => { throw new Gabp.GabpToolException("no such player", -32010); })
               .Tool("demo/raise_error", "Opens a blocking attention item", args =>
                    Gabp.Json.Write(new Dictionary<string, object> { { "attentionId", mod.OpenAttention("the save file is corrupt") } }))
               .Tool("demo/resolve", "Resolves it", args => { mod.ResolveAttention(); return "{}"; })
               .Resource("gabp://game/world", "World", () => "{\"name\":\"Ödland\",\"size\":16}", "The world", "application/json")
               .BinaryResource("gabp://mod/icon", "Icon", () => new byte[] { 0x89, 0x50, 0x4e, 0x47, 0, 0xff }, "", "image/png")
               .Resource("gabp://game/save", "Save", () => { throw new InvalidOperationException("no save loaded"); })
               .Channel("world/ticked")
               .Attention();
            mod.Start();
            Console.WriteLine("listening on " + mod.Endpoint);
            Console.Out.Flush();
            new Thread(() => { while (Console.In.Read() >= 0) { } stop = true; mod.Wake(); }) { IsBackground = true }.Start();
            Thread.CurrentThread.Name = "game";
            while (!stop)
            {
                mod.Wait(TimeSpan.FromMilliseconds(16));
                mod.Pump();
            }
        }
        return 0;
    }
}
