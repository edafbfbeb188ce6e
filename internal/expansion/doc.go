// Package expansion expands $(VAR) references the way the Kubernetes API
// documents them for a container's command, args, env values and
// volumeMounts' subPathExpr: $(NAME) becomes the variable's value, a
// reference to an unknown name is left as written, and $$ is an escaped $
// (so $$(NAME) is the literal $(NAME)). Both cri/podsync and volume use it.
package expansion
