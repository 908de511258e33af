/* bench/yaml-events.c: libyaml's bare event loop over one file, the reference for
 * `prefetch validate` (issue 20, target 4). It parses until STREAM_END and does nothing
 * else: no nodes, no strings kept, no checks. Built by bench/run with
 *   cc -O2 -o bench/out/yaml-events bench/yaml-events.c -lyaml
 * Prints the number of events; exits 1 on a parse error (with libyaml's message). */
#include <stdio.h>
#include <yaml.h>

int main(int argc, char **argv) {
    if (argc != 2) { fprintf(stderr, "usage: yaml-events FILE\n"); return 2; }
    FILE *file = fopen(argv[1], "rb");
    if (!file) { perror(argv[1]); return 2; }
    yaml_parser_t parser;
    yaml_event_t event;
    unsigned long events = 0;
    int done = 0;
    if (!yaml_parser_initialize(&parser)) { fprintf(stderr, "yaml-events: no memory\n"); return 1; }
    yaml_parser_set_input_file(&parser, file);
    while (!done) {
        if (!yaml_parser_parse(&parser, &event)) {
            fprintf(stderr, "yaml-events: %s:%lu:%lu: %s\n", argv[1],
                    (unsigned long)parser.problem_mark.line + 1, (unsigned long)parser.problem_mark.column + 1,
                    parser.problem ? parser.problem : "parse error");
            yaml_parser_delete(&parser);
            fclose(file);
            return 1;
        }
        done = event.type == YAML_STREAM_END_EVENT;
        yaml_event_delete(&event);
        events++;
    }
    yaml_parser_delete(&parser);
    fclose(file);
    printf("%lu events\n", events);
    return 0;
}
