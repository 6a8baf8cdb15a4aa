/* placeholder: being written */
typedef int nanolet_placeholder_t;
