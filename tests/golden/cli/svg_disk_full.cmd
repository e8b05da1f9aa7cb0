layout 'local(2)' --svg /dev/full
