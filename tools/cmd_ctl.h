/* flightrec reload and flightrec trigger (tools/cmd_ctl.c): the commands
 * that control the running recorder over its socket. Each parses its
 * options (argv[0] is the command's name) and returns the exit status:
 * 0 success, 1 failure, 2 usage error. */
#ifndef FR_TOOLS_CMD_CTL_H
#define FR_TOOLS_CMD_CTL_H

int fr_cmd_reload(int argc, char **argv);
int fr_cmd_trigger(int argc, char **argv);

#endif
