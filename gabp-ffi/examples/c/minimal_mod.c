/* A minimal GABP mod in C: `demo/echo` answered at once, `demo/sleep` later from a thread of its own, `world/step` on the game's thread
 * publishing a `world/stepped` event, and a game loop that pumps. Endpoint and token come from the GABS
 * environment (GABP_SERVER_PORT, GABP_TOKEN) when set. Ends on SIGINT, SIGTERM or, unless a launcher started
 * it (GABS_GAME_ID set), the end of stdin.
 * Build: cc minimal_mod.c -I ../../include -L <target>/release -lgabp -lpthread */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gabp.h"

static volatile sig_atomic_t running = 1;
static uint64_t mod;
static long ticks = 0;

static void on_signal(int sig) { (void)sig; running = 0; }

static void *watch_stdin(void *unused) {
    char buf[256];
    while (read(0, buf, sizeof buf) > 0) {}
    running = 0;
    gabp_mod_wake(mod);
    return unused;
}

static void echo(void *user, uint64_t call, const char *args, size_t len) {
    (void)user;
    gabp_call_reply(call, args, len); /* the arguments are {"value": ...}: answer them, from the library's thread */
}

static void *answer_sleep(void *p) {
    uint64_t call = *(uint64_t *)p;
    bool cancelled = false;
    free(p);
    for (int i = 1; i <= 24 && !cancelled; i++) { /* 1.2 s, stopping early when the call is cancelled */
        usleep(50000);
        gabp_call_progress(call, i, 24, NULL, 0);
        gabp_call_is_cancelled(call, &cancelled);
    }
    gabp_call_reply(call, "{\"slept\":true}", 14); /* GABP_STATUS_CALL_ENDED when cancelled: fine */
    return NULL;
}

static void sleep_tool(void *user, uint64_t call, const char *args, size_t len) {
    uint64_t *job = malloc(sizeof *job);
    pthread_t thread;
    (void)user; (void)args; (void)len;
    if (job == NULL) { gabp_call_fail(call, 0, "out of memory", 13); return; }
    *job = call;
    if (pthread_create(&thread, NULL, answer_sleep, job) != 0) { answer_sleep(job); return; }
    pthread_detach(thread);
}

static void step(void *user, uint64_t call, const char *args, size_t len) {
    char json[64];
    (void)user; (void)args; (void)len;
    int n = snprintf(json, sizeof json, "{\"tick\":%ld}", ++ticks);
    gabp_mod_publish(mod, "world/stepped", 13, json, (size_t)n, NULL);
    gabp_call_reply(call, json, (size_t)n);
}

static int check(GabpStatus status, const char *what) {
    if (status != GABP_STATUS_OK) fprintf(stderr, "%s: %s\n", what, gabp_last_error(NULL));
    return status == GABP_STATUS_OK;
}

int main(void) {
    const char *echo_schema = "{\"type\":\"object\",\"properties\":{\"value\":{}},\"required\":[\"value\"]}";
    GabpString endpoint = {NULL, 0};
    pthread_t stdin_thread;
    if (!check(gabp_mod_new("c-minimal", 9, "1.0.0", 5, &mod), "new")
        || !check(gabp_mod_add_tool(mod, "demo/echo", 9, "Answers its arguments", 21, echo_schema,
                                    strlen(echo_schema), GABP_TOOL_READ_ONLY, echo, NULL), "demo/echo")
        || !check(gabp_mod_add_tool(mod, "demo/sleep", 10, "Answers after 1.2 s", 19, "", 0, 0, sleep_tool,
                                    NULL), "demo/sleep")
        || !check(gabp_mod_add_tool(mod, "world/step", 10, "Advances the world one tick", 27, "", 0,
                                    GABP_TOOL_MAIN_THREAD, step, NULL), "world/step")
        || !check(gabp_mod_add_channel(mod, "world/stepped", 13), "channel")
        || !check(gabp_mod_start(mod), "start") || !check(gabp_mod_endpoint(mod, &endpoint), "endpoint"))
        return 1;
    printf("listening on %s\n", endpoint.ptr);
    fflush(stdout);
    gabp_string_free(&endpoint);
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    if (getenv("GABS_GAME_ID") == NULL) { /* a launcher (GABS, gabp mcp) stops it with a signal instead */
        pthread_create(&stdin_thread, NULL, watch_stdin, NULL);
        pthread_detach(stdin_thread);
    }
    while (running) {                    /* the game loop: ~60 frames a second, woken at once for work */
        gabp_mod_wait(mod, 16000, NULL);
        gabp_mod_pump(mod, 2000, NULL);
    }
    return check(gabp_mod_free(mod), "free") ? 0 : 1;
}
